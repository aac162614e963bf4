// The Pipedrive emulator (src/sandbox/pipedrive-api.ts) in a process of its own for scenarios 14-15, with the limits
// the bench gives it: `node bench/lib/pipedrive-server.mjs '{"burst":400,"searchBurst":400,...}'`. Prints its URL on
// stdout once listening; stops on SIGINT/SIGTERM. The `leadledger sandbox` command has no flags for these limits.
import { startPipedriveEmulator } from '../../dist/sandbox/pipedrive-api.js';

const opts = JSON.parse(process.argv[2] ?? '{}');
const emu = await startPipedriveEmulator(opts);
process.stdout.write(`${emu.url}\n`);
const stop = () => emu.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
