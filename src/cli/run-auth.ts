// Wiring of `leadledger auth <sink>`: the sink's own authorize hook obtains and stores its credentials. Secrets come
// from the environment or the consent page, never from a flag; what was written is named, never shown.
import { UsageError } from '../errors.js';
import { findSink, sinkNamesText } from '../sinks/registry.js';
import { authorizingSinks } from './options.js';
import { didYouMean } from '../did-you-mean.js';

/** Runs a sink's authorization; returns the exit code. */
export async function runAuth(name: string, flags: Record<string, unknown>): Promise<number> {
  const sink = findSink(name);
  const takers = authorizingSinks().map((s) => s.name);
  if (!sink)
    throw new UsageError(
      `no sink '${name}': leadledger auth takes ${takers.join(', ')} (sinks: ${sinkNamesText()})${didYouMean(name, takers)}`,
    );
  if (!sink.authorize) {
    const how = sink.tokenEnv
      ? `it takes a token: set ${sink.tokenEnv}, or pass --token-file to push`
      : 'it takes no authorization';
    throw new UsageError(`${name} needs no \`leadledger auth\`: ${how} (auth is for ${takers.join(', ')})`);
  }
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const done = await sink.authorize(flags, {
      env: process.env,
      allowInsecure: !!flags.allowInsecure,
      log: (line) => void process.stderr.write(`${line}\n`),
      signal: stop.signal,
    });
    process.stdout.write(`${done.message}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
