// The ledger's checkpointer thread (threaded.ts starts it beside the writer thread): a third connection to the
// ledger file, which copies the WAL's committed pages back into the file while the writer goes on committing.
//
// Every commit appends the pages it changed to the WAL, and a checkpoint copies them into the file and syncs it. Left
// to the writer's connection (its autocheckpoint), that copy runs inside one of the writer's commits, and the writer
// is what bounds a push to a fast sink (bench scenario 10). A PASSIVE checkpoint needs no lock that the writer holds:
// it copies what is committed, up to where a reader still needs the WAL, and leaves the rest to the next one. Once a
// checkpoint has copied the whole WAL, the writer's next commit starts it over from its beginning, so the WAL stays
// as small as the writes between two checkpoints.
//
// A checkpoint changes nothing that a reader or a writer sees: it only moves committed pages from one file to the
// other, and a kill in the middle of one leaves the WAL to be copied by the next connection. Should this thread fall
// behind or fail, the writer's own autocheckpoint still bounds the WAL (WRITER_CHECKPOINT_PAGES in checkpointer.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { openReadWrite } from './connect.js';
import type { CheckpointerInit } from './checkpointer.js';

const init = workerData as CheckpointerInit;
const port = parentPort!;
const db = openReadWrite(init.file);
db.pragma('synchronous = NORMAL');
let timer: NodeJS.Timeout | undefined;
let failures = 0;

function tick(): void {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    failures = 0;
  } catch {
    // SQLITE_BUSY (another connection checkpointing), or a file gone bad: the writer's autocheckpoint stays the
    // fallback, and the writer reports any error of the file itself. After a few in a row, this thread gives up.
    if (++failures >= 10) return;
  }
  timer = setTimeout(tick, init.everyMs);
}

port.on('message', (m: 'close') => {
  if (m !== 'close') return;
  clearTimeout(timer);
  // Not the last connection (the writer's and the main one are open): closing copies nothing and removes nothing.
  db.close();
  port.postMessage('closed');
  port.close();
});

timer = setTimeout(tick, init.everyMs);
