// The conformance scenarios (scenarios.ts) for the file kinds on a local directory.
import { localCsv, localParquet } from './file-backends.js';
import { conformanceScenarios } from './scenarios.js';

conformanceScenarios(localCsv);
conformanceScenarios(localParquet);
