// Application logs whose lines hold the webhook bodies their handlers logged. Recognized by the logger's own
// fields (observed from pino 10, winston 3 and bunyan 2 output); the body is looked for where handlers put it.
import type { LogDef } from './types.js';

const BODIES = ['body', 'payload', 'req.body', 'request.body', 'rawBody'];

export const LOG_DEFS: readonly LogDef[] = [
  {
    name: 'bunyan',
    title: 'bunyan log',
    docs: ['https://github.com/trentm/node-bunyan#core-fields'],
    signature: { has: ['v', 'level', 'name', 'hostname', 'pid', 'time', 'msg'] },
    bodies: BODIES,
  },
  {
    name: 'pino',
    title: 'pino log',
    docs: ['https://getpino.io/#/docs/api?id=logger'],
    signature: { has: ['level', 'time', 'pid', 'hostname'] },
    bodies: BODIES,
  },
  {
    name: 'winston',
    title: 'winston log',
    docs: ['https://github.com/winstonjs/winston#formats'],
    signature: { has: ['level', 'message'] },
    bodies: BODIES,
  },
];
