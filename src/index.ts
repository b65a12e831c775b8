/**
 * dqs-client: a typed, streaming client of the Dataset Query Service.
 * This module only re-exports; internals stay unexported.
 */
export {
  type DuckDBConnectionLike,
  type PolarsDataFrameLike,
  type PolarsLike,
  type ToDuckDBOptions,
  type ToPolarsOptions,
  toDuckDB,
  toPolars,
} from './analytics/dataframes.js';
export { type QueryEachItem, type QueryEachOptions, queryEach } from './analytics/fan-out.js';
export {
  exportPartitioned,
  type PartitionedExportOptions,
  type PartitionedExportResult,
  type PartitionProgress,
  type PartitionReport,
  type PartitionStreamOptions,
  partitionPath,
} from './analytics/partitioned-export.js';
export {
  type DisplayOptions,
  display,
  Preview,
  type PreviewableResult,
  type PreviewOptions,
  type PreviewReadOptions,
  preview,
  type TslabLike,
} from './analytics/preview.js';
export type { CacheEvent } from './cache/events.js';
export type { CacheOptions } from './cache/options.js';
export { DatasetClient, type DatasetClientOptions, type QueryOptions } from './client.js';
export type { ColumnKind } from './convert/index.js';
export {
  AbortError,
  AuthenticationError,
  BadRequestError,
  ConnectionError,
  type ConnectionErrorCode,
  ContentEncodingError,
  DecodeError,
  DqsError,
  type DqsErrorCode,
  ForbiddenError,
  FormatNotOfferedError,
  HttpError,
  InvalidArgumentError,
  InvalidValueError,
  MissingPackageError,
  NetworkError,
  NotAcceptableError,
  NotFoundError,
  NotServiceError,
  type PageRef,
  ProtocolError,
  QueryFailedError,
  RateLimitedError,
  ResponseTooLargeError,
  RowLimitError,
  ServerError,
  SplitSchemaError,
  TimeoutError,
  TruncatedError,
} from './core/errors.js';
export type { LoopBudget } from './core/loop-budget.js';
export { RawQueryBody, rawBody } from './core/raw-body.js';
export { VERSION } from './core/version.js';
export {
  API_VERSION,
  type DatasetInfo,
  type DatasetMetadata,
  type Entity,
  type FieldDescriptor,
  type FormatName,
  MediaType,
  type QueryBody,
  type QueryHandle,
  type QueryState,
  type QueryStatus,
  type ResultPage,
  ROW_CAP,
  type SortEntry,
  type TickerEntry,
  type WireValue,
} from './core/wire.js';
export { type ArrowIpcOptions, toArrowIpc } from './output/arrow-ipc.js';
export { type CsvOptions, toCsv } from './output/csv.js';
export { decodeDictionaries } from './output/dictionaries.js';
export { toJsonl } from './output/jsonl.js';
export { type ParquetCompression, type ParquetOptions, toParquet } from './output/parquet.js';
export { type DownloadOptions, QueryResult } from './query/query-result.js';
export type { MimeBundle } from './query/result-display.js';
export type { ResultInfo } from './query/result-source.js';
export { type Checkpoint, type ProgressEvent, ResultStream } from './query/result-stream.js';
export type { ConcurrencyChange } from './query/scheduler.js';
export type { SplitWarning } from './query/split.js';
export type { ResultPart, SplitInfo } from './query/split-info.js';
export type { StreamOptions } from './query/stream-options.js';
export { type CheckTickersMode, unknownTickers } from './tickers/coverage.js';
export type { CallOptions, PageRequest, RawPageRequest } from './transport/endpoints.js';
export type { ClientOptions, Logger } from './transport/options.js';
export type { RateLimitOptions } from './transport/rate-limiter.js';
export type { RetryEvent, RetryOptions } from './transport/retry.js';
