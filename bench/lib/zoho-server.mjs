// The Zoho CRM emulator (src/sandbox/zoho-api.ts) in a process of its own for scenarios 19-20, with the limits the
// bench gives it: `node bench/lib/zoho-server.mjs '{"concurrency":2,"faults":{"latencyMs":400},...}'`. Prints its URL
// on stdout once listening; stops on SIGINT/SIGTERM.
import { startZohoEmulator } from '../../dist/sandbox/zoho-api.js';

const opts = JSON.parse(process.argv[2] ?? '{}');
const emu = await startZohoEmulator(opts);
process.stdout.write(`${emu.url}\n`);
const stop = () => emu.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
