// The benchmark's page server: the emulator in its own process, with a page cache large enough that every
// page is serialized once during warm-up and then served from memory, so the server costs ~nothing.
import { startEmulator } from '../dist/emulator/index.js';

const emu = await startEmulator({
  port: 0,
  apiKey: 'bench',
  pageCacheSize: 100_000,
  pageCacheBytes: 4 * 1024 * 1024 * 1024,
});
process.send?.({ url: emu.url });
process.on('disconnect', () => emu.close().then(() => process.exit(0)));
