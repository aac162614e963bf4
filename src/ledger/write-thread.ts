// The ledger's writer thread (threaded.ts starts it): a connection of its own to the ledger file, on which a push's
// claims, settles and releases are committed one message at a time, in the order they were asked for. The thread
// runs the very same Ledger methods as the main thread would; it only takes their cost off the thread that reads,
// decides and sends.
import { parentPort, workerData } from 'node:worker_threads';
import { openReadWrite } from './connect.js';
import { Ledger } from './ledger.js';
import type { WriteReply, WriteRequest, WriterInit } from './threaded.js';

const init = workerData as WriterInit;
const port = parentPort!;
let ledger: Ledger | undefined;

port.on('message', (m: WriteRequest) => {
  let reply: WriteReply;
  try {
    if (m.op === 'close') {
      ledger?.close({ checkpoint: false });
      ledger = undefined;
      port.postMessage({ id: m.id } satisfies WriteReply);
      port.close();
      return;
    }
    if (!ledger) {
      ledger = new Ledger(openReadWrite(init.file), init.file, false);
      // The checkpointer thread copies the WAL back into the file; this connection does so only as a fallback.
      ledger.db.pragma(`wal_autocheckpoint = ${init.checkpointPages}`);
    }
    ledger.dropSentPayloads = m.dropSentPayloads;
    switch (m.op) {
      case 'claimNew': {
        reply = { id: m.id, notTaken: ledger.claimNewFromColumns(m.claims, m.runId, m.sink) };
        break;
      }
      case 'claimExisting':
        reply = { id: m.id, keys: [...ledger.claimExisting(m.keys, m.runId, m.from, m.sink)] };
        break;
      case 'settle':
        ledger.settleFromColumns(m.settlements, m.runId);
        reply = { id: m.id };
        break;
      case 'release':
        ledger.release(m.items, m.runId, m.detail);
        reply = { id: m.id };
        break;
      case 'heartbeat':
        ledger.heartbeat(m.runId);
        reply = { id: m.id };
        break;
    }
  } catch (e) {
    const err = e as { name?: string; message?: string; code?: unknown; stack?: string };
    reply = {
      id: m.id,
      error: {
        name: err.name ?? 'Error',
        message: err.message ?? String(e),
        code: typeof err.code === 'string' ? err.code : undefined,
        stack: err.stack,
      },
    };
  }
  port.postMessage(reply);
});
