// Wiring of `leadledger sandbox`: flags → runSandbox options.
import { UsageError } from '../errors.js';
import { runSandbox } from '../sandbox/run-emulator.js';
import type { Faults } from '../sandbox/faults.js';

/** Runs the CRM emulator until Ctrl-C; returns the exit code. */
export async function runSandboxCommand(flags: Record<string, unknown>): Promise<number> {
  const port = Number(flags.port);
  const latency = Number(flags.latency);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port takes a port number, not '${String(flags.port)}'`);
  if (!Number.isFinite(latency) || latency < 0)
    throw new UsageError(`--latency takes milliseconds, not '${String(flags.latency)}'`);
  let faults: Faults | undefined;
  if (typeof flags.faults === 'string') {
    try {
      faults = JSON.parse(flags.faults) as Faults;
    } catch (e) {
      throw new UsageError(`--faults is not valid JSON: ${(e as Error).message}`);
    }
  }
  await runSandbox({
    port,
    latency,
    faults,
    tokenEnv: flags.tokenEnv as string | undefined,
    rateLimit: flags.rateLimit as string | undefined,
    rdstationRateLimit: flags.rdstationRateLimit as string | undefined,
    webhookSecretEnv: flags.webhookSecretEnv as string | undefined,
    honourIdempotencyKey: !!flags.honourIdempotencyKey,
  });
  return 0;
}
