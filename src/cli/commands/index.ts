/** Every command, in the order `dqs --help` lists them. */
import type { Command } from '../command.js';
import { cacheCommand } from './cache.js';
import { datasetCommand } from './dataset.js';
import { datasetsCommand } from './datasets.js';
import { doctorCommand } from './doctor.js';
import { exportCommand } from './export.js';
import { queryCommand } from './query.js';
import { serveCommand } from './serve.js';
import { statusCommand } from './status.js';
import { tickersCommand } from './tickers.js';

export const COMMANDS: readonly Command[] = [
  queryCommand,
  exportCommand,
  datasetsCommand,
  datasetCommand,
  tickersCommand,
  statusCommand,
  serveCommand,
  cacheCommand,
  doctorCommand,
];
