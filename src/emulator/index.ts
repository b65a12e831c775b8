/**
 * `dqs-client/emulator`: a local, spec-faithful Dataset Query Service with deterministic synthetic data,
 * for tests, demos and CI.
 *
 * @example
 * import { startEmulator, queryRows } from 'dqs-client/emulator';
 * const emu = await startEmulator({ port: 0, apiKey: 'demo' });
 * // ... point the client at emu.url with emu.apiKey ...
 * await emu.close();
 */
export { COMPANIES } from './companies.js';
export {
  DATASET_IDS,
  type DataOptions,
  datasetFields,
  type QueryInfo,
  queryInfo,
  queryRows,
  queryTotal,
} from './expected.js';
export {
  FAILING_KINDS,
  FAULT_KINDS,
  type FaultKind,
  type FaultPlan,
  type FaultPlanOptions,
  faultPlan,
  type InjectedFault,
} from './fault-plan.js';
export type { Fault, FaultContext, FaultHook } from './faults.js';
export type { EmulatorOptions } from './options.js';
export { type Emulator, type EmulatorStats, type RequestRecord, startEmulator } from './server.js';
