// The WAN benchmark's service: the emulator with the scenario's shaping, in its own process (so its CPU is
// not the client's). Started fresh for every run (a rate limit's window and the in-flight count start
// empty); reports what it saw: statuses and arrival times of every request.
import { startEmulator } from '../dist/emulator/index.js';

let emu;
process.on('message', async (message) => {
  if (message.start) {
    await emu?.close();
    emu = await startEmulator({
      port: 0,
      apiKey: 'bench',
      pageCacheSize: 1000,
      pageCacheBytes: 2 * 1024 * 1024 * 1024,
      requestLogLimit: 100_000,
      ...message.start,
    });
    process.send({ url: emu.url });
  } else if (message.requests) {
    process.send({ requests: emu.requests.map((r) => ({ method: r.method, status: r.status, at: r.at })) });
  }
});
process.on('disconnect', () => (emu ? emu.close() : Promise.resolve()).then(() => process.exit(0)));
process.send({ ready: true });
