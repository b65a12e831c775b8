// The WAN benchmark's service: the emulator with the scenario's shaping, in its own process (so its CPU is
// not the client's). Kept from run to run of one scenario, so its page cache is warm: the service's work
// is modelled by the shaping's page execution time, and the emulator building pages on the client's two
// cores would measure the benchmark machine, not the client. Started fresh when asked (a rate limit's
// window must start empty); reports what it saw: statuses and arrival times of every request.
import { startEmulator } from '../dist/emulator/index.js';

let emu;
let current;
process.on('message', async (message) => {
  if (message.start) {
    const options = JSON.stringify(message.start);
    if (emu && !message.fresh && options === current) {
      emu.resetRequests();
      process.send({ url: emu.url });
      return;
    }
    await emu?.close();
    current = options;
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
