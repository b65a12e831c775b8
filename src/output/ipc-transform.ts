/**
 * `arrowIpcTransform()`: RecordBatches in, Arrow IPC bytes out, as a plain Transform: each batch's bytes
 * are produced synchronously in `transform()`, so Node's own backpressure applies and an error or a
 * `destroy()` leaves nothing pending.
 *
 * Why not apache-arrow's `RecordBatchWriter.throughNode()` (what `toArrowIpc()` returns): its writable side
 * acknowledges every batch at once, so a slow reader (a pipe) lets the encoded result pile up in memory,
 * and destroying it with an error rejects a read nobody awaits (an unhandled rejection that kills the
 * process). Here the same writer classes do the encoding, into a sink that we empty after every write.
 *
 * The batches are re-cut to `batchSize` rows with the writer's own dictionaries first (`FixedBatches`):
 * the bytes then depend on the rows alone, not on the page sizes or the concurrency of the read.
 */
import { Transform } from 'node:stream';
import {
  AsyncByteQueue,
  type RecordBatch,
  RecordBatchFileWriter,
  RecordBatchStreamWriter,
} from 'apache-arrow';
import { FixedBatches } from './fixed-batches.js';

/** A sink the writer can write into, emptied synchronously by `take()`. */
class CollectingSink extends AsyncByteQueue {
  #chunks: Uint8Array[] = [];

  // Typed loosely: the writer hands over ArrayBufferViews of several kinds (bytes, Int32 lengths).
  override write(value: ArrayBufferView | ArrayBufferLike | string): void {
    if (typeof value === 'string') this.#chunks.push(Buffer.from(value, 'utf8'));
    else if (ArrayBuffer.isView(value)) {
      if (value.byteLength > 0)
        this.#chunks.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    } else if (value.byteLength > 0) this.#chunks.push(new Uint8Array(value));
  }

  /** The chunks written since the last call: views of the batch's own buffers, not copies. */
  take(): Uint8Array[] {
    const out = this.#chunks;
    this.#chunks = [];
    return out;
  }
}

/**
 * The encoding alone: each call returns the IPC bytes of what it was given, as views of the batch's own
 * buffers (for writers that are not Node streams, e.g. the result cache's entries).
 */
export function ipcEncoder(format: 'file' | 'stream'): {
  write(batch: RecordBatch): Uint8Array[];
  close(): Uint8Array[];
} {
  const sink = new CollectingSink();
  const writer = format === 'file' ? new RecordBatchFileWriter() : new RecordBatchStreamWriter();
  writer.reset(sink);
  return {
    write(batch) {
      writer.write(batch);
      return sink.take();
    },
    close() {
      // Writes the end-of-stream marker, or the file footer with every batch's offset.
      writer.close();
      return sink.take();
    },
  };
}

export function arrowIpcTransform(format: 'file' | 'stream', batchSize?: number): Transform {
  const fixed = new FixedBatches(batchSize);
  const encoder = ipcEncoder(format);
  return new Transform({
    writableObjectMode: true,
    readableObjectMode: false,
    // One batch waits on the way in; about one batch's bytes on the way out, so the next batch is
    // encoded while the file stream's write is in flight (at the default 16 KiB every batch waited
    // for the previous write to finish: ~0.3 s of 1.7 s for 500k rows in `npm run bench`).
    writableHighWaterMark: 1,
    readableHighWaterMark: 4 << 20,
    transform(batch: RecordBatch, _encoding, callback) {
      try {
        // Pushed as they are (headers, then the batch's buffers): one concatenated copy per batch cost
        // a batch's size in garbage and time; the file stream writes them together (writev).
        for (const out of fixed.push(batch)) for (const chunk of encoder.write(out)) this.push(chunk);
        callback();
      } catch (err) {
        callback(err as Error);
      }
    },
    flush(callback) {
      try {
        for (const out of fixed.end()) for (const chunk of encoder.write(out)) this.push(chunk);
        for (const chunk of encoder.close()) this.push(chunk);
        callback();
      } catch (err) {
        callback(err as Error);
      }
    },
  });
}
