// The command a person runs to settle what a run left in doubt, written from the run's own sink options.
import type { ConfiguredSink } from '../sinks/definition.js';
import { canFindWritten, canLookUp, type Sink } from '../sinks/types.js';

/** How in-doubt events of a sink get settled, and the replay command that does it. */
export interface InDoubtResolution {
  command: string;
  /** What the command does with them: looked up first, re-sent with their key, or re-sent blind. */
  how: string;
  /** What the next push on this sink does with them before its own events (recoverInDoubt, without --resend). */
  nextPush: string;
}

/**
 * The `leadledger replay --in-doubt ...` line for this sink and ledger (no token: it comes from the environment or
 * --token-file as it did for this run), and what it will do: look each event up in the CRM first where the sink
 * can, re-send it with its key where the destination drops repeats, else (--resend) re-send it as is.
 */
export function inDoubtResolution(f: { ledger?: string }, chosen: ConfiguredSink, sink: Sink): InDoubtResolution {
  const lookup = canLookUp(sink);
  const find = canFindWritten(sink);
  const drops = sink.capabilities.honoursIdempotencyKey;
  const args = ['leadledger', 'replay', '--in-doubt'];
  // A file read back settles what it holds, and re-sends the rest only with --resend (it may have been rotated).
  if (!lookup && !drops) args.push('--resend');
  args.push('--sink', chosen.name, ...chosen.replayArgs());
  if (f.ledger) args.push('--ledger', f.ledger);
  const how = lookup
    ? 'each looked up in the CRM first, re-sent only where it is not there'
    : find
      ? 'each looked for in the output first: those there are settled, the others written again'
      : drops
        ? 're-sent with the same key, which the destination drops if it has it'
        : 're-sent as they are: the destination may get them twice';
  const nextPush =
    lookup || drops
      ? 'the next push on this sink does the same first'
      : find
        ? 'the next push on this sink settles those it finds there first, and writes none of the others'
        : 'the next push on this sink leaves them in doubt';
  return { command: args.map(shellWord).join(' '), how, nextPush };
}

// A word as a POSIX shell reads it back: as is when it is plain, else in single quotes.
function shellWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}
