// The receiver's log: JSON lines off a terminal (one object a line: time, level, msg and fields, for a log
// collector), plain lines on one. Fields are counts, names and reasons; never a header value, a body or a secret.

/** A log's fields. */
export type LogFields = Record<string, string | number | boolean | undefined>;

/** Writes the receiver's log lines. */
export interface ServeLog {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** A log on a stream: JSON lines when `json`, else `level: msg (k=v ...)`; `quiet` keeps only warnings and errors. */
export function createServeLog(out: NodeJS.WritableStream, json: boolean, quiet = false): ServeLog {
  const write = (level: 'info' | 'warn' | 'error', msg: string, fields: LogFields = {}) => {
    if (quiet && level === 'info') return;
    const f = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    if (json) out.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...f }) + '\n');
    else {
      const extra = Object.entries(f)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(' ');
      out.write(`${level === 'info' ? '' : `${level}: `}${msg}${extra ? ` (${extra})` : ''}\n`);
    }
  };
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}
