import { backfillCommand } from './backfill-command.js';
import type { Command } from './command.js';
import { initCommand } from './init-command.js';
import { k8sCommand } from './k8s-command.js';
import { planCommand } from './plan-command.js';
import { runCommand } from './run-command.js';
import { scheduleCommand } from './schedule-command.js';
import { validateCommand } from './validate-command.js';

/** Every `tilehouse <command>`, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [runCommand, scheduleCommand, backfillCommand, planCommand, validateCommand, initCommand, k8sCommand];
