import { describe, expect, it } from 'vitest';
import { errorReport } from '../../../src/errors.js';
import { ExportApiError, exportRefusalOf } from '../../../src/source/export-endpoint/export-errors.js';

/**
 * A run's record keeps a failure as its code and message only; `status`'s repair reads the
 * source's refusal back from the message ExportApiError wrote (as the summary and the history
 * carry it: the job named once, redacted), so the two are tested together.
 */
describe('exportRefusalOf', () => {
  it('reads back the status, the service message and the tile a 400 names', () => {
    const message = errorReport(new ExportApiError('types', 0, 400, 'invalid id', { id: '65f0a1c2d3e4f5a6b7c8d920', param: 'tileId' }), 'types').message;
    expect(exportRefusalOf(message)).toEqual({ status: 400, apiMessage: 'invalid id', tile: '65f0a1c2d3e4f5a6b7c8d920' });
  });

  it('reads another 4xx without a tile, a message with "; " in it whole', () => {
    expect(exportRefusalOf(new ExportApiError('types', 2, 403, 'forbidden; ask the tenant admin').message)).toEqual({
      status: 403,
      apiMessage: 'forbidden; ask the tenant admin',
    });
  });

  it('is undefined for an answer that was no refusal (ok: false on a 200) and for any other message', () => {
    expect(exportRefusalOf(new ExportApiError('types', 0, 200, 'query failed').message)).toBeUndefined();
    expect(exportRefusalOf('job types: page 0: unusable export response: body is not JSON')).toBeUndefined();
  });
});
