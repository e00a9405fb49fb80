import { hostname } from 'node:os';
import { readFile, readlink } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentOwner, formatOwnerTag, ownerState, parseOwnerTag } from '../src/temp-owner.js';
import { DEAD_PID, procStartTicks, startLiveProcess, tagOf, type LiveProcess } from './support/temp-owners.js';

let live: LiveProcess;
beforeAll(async () => {
  live = await startLiveProcess();
});
afterAll(async () => {
  await live.stop();
});

describe('currentOwner', () => {
  it('is this process: host, the first 8 hex digits of the boot id, pid namespace, pid and start ticks', async () => {
    const bootId = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
    expect(currentOwner()).toEqual({
      host: hostname()
        .replace(/[^A-Za-z0-9.-]/g, '-')
        .slice(0, 63),
      boot: bootId.replace(/-/g, '').slice(0, 8),
      pidns: (await readlink('/proc/self/ns/pid')).replace(/\D/g, ''),
      pid: process.pid,
      start: await procStartTicks(process.pid),
    });
    expect(currentOwner()).toBe(currentOwner());
  });
});

describe('formatOwnerTag / parseOwnerTag', () => {
  it('round-trips an owner', () => {
    const owner = { host: 'pod-7.example', boot: '0123abcd', pidns: '4026531836', pid: 4242, start: '987654' };
    expect(formatOwnerTag(owner)).toBe('pod-7.example+0123abcd+4026531836+4242+987654');
    expect(parseOwnerTag(formatOwnerTag(owner))).toEqual(owner);
    expect(parseOwnerTag(formatOwnerTag())).toEqual(currentOwner());
  });

  it('refuses what is not a tag', () => {
    for (const text of ['', 'host+boot+ns+pid+start', 'a+b+1', 'a+b+n+1', 'a+b+n+1+2+3', 'h_x+b+n+1+2', 'h+b+n+-1+2', 'h+b+n+1+']) {
      expect(parseOwnerTag(text), text).toBeUndefined();
    }
  });
});

describe('ownerState', () => {
  it('is self for this process', () => {
    expect(ownerState(currentOwner())).toBe('self');
  });

  it('is alive for a live other process on this host', () => {
    expect(ownerState(parseOwnerTag(live.tag)!)).toBe('alive');
  });

  it('is gone for a pid that does not exist', () => {
    expect(ownerState(parseOwnerTag(tagOf({ pid: DEAD_PID, start: '1' }))!)).toBe('gone');
  });

  it('is gone for a reused pid: the right pid with other start ticks', () => {
    expect(ownerState({ ...currentOwner(), pid: live.pid, start: String(Number(live.start) + 1) })).toBe('gone');
    expect(ownerState({ ...currentOwner(), start: String(Number(currentOwner().start) + 1) })).toBe('gone');
  });

  it('is gone for a process of an earlier boot, even with a live pid', () => {
    expect(ownerState({ ...currentOwner(), pid: live.pid, start: live.start, boot: 'deadbeef' })).toBe('gone');
  });

  it('is unknown for another pid namespace on this host (a container with the same host name), whatever its pid', () => {
    expect(ownerState({ ...currentOwner(), pidns: '1' })).toBe('unknown');
    expect(ownerState({ ...currentOwner(), pidns: '1', pid: DEAD_PID })).toBe('unknown');
  });

  it('is unknown for another host, whatever its pid', () => {
    expect(ownerState({ ...currentOwner(), host: 'another-host' })).toBe('unknown');
    expect(ownerState({ ...currentOwner(), host: 'another-host', pid: DEAD_PID })).toBe('unknown');
  });

  it('is alive for a live pid written without start ticks (off Linux): the safe mistake', () => {
    expect(ownerState({ ...currentOwner(), pid: live.pid, start: 'nostart' })).toBe('alive');
  });
});
