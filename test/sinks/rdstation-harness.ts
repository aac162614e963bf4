// The RD Station tests' harness: the emulator and the HTTP client on one virtual clock (a client's sleep moves it,
// and the emulator's windows and token expiry read it), a credentials file in a temporary directory, and the sink.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startRdStationEmulator,
  type RdStationEmulator,
  type RdStationEmulatorOptions,
} from '../../src/sandbox/rdstation-emulator.js';
import { HttpClient, type HttpClientOptions } from '../../src/sinks/transport/http.js';
import { openRdStationSink, rdstationOptions, type RdStationSink } from '../../src/sinks/rdstation/index.js';

export const CLIENT_ID = 'client-7f3a9c2e';
export const CLIENT_SECRET = 'secret-canary-51d84b06e2a1';
export const REFRESH = 'refresh-canary-9b2e77c4d3f0';

/** A clock tests move; sleeps of the client move it too. */
export class VirtualClock {
  offset = 0;
  readonly base = Date.now();
  now = (): number => this.base + this.offset;
  advance(ms: number): void {
    this.offset += ms;
  }
}

export interface Harness {
  emu: RdStationEmulator;
  clock: VirtualClock;
  dir: string;
  credentials: string;
  sleeps: number[];
  /** Stop the emulator and remove the temporary directory. */
  close(): Promise<void>;
  client(extra?: HttpClientOptions): HttpClient;
  /** The sink as the registry would open it: options from flags, env and config. */
  sink(o?: {
    env?: Record<string, string | undefined>;
    config?: unknown;
    conversion?: string;
    http?: HttpClientOptions;
    warn?: (m: string) => void;
  }): Promise<RdStationSink>;
}

/** Start an emulator on a virtual clock, with the test client's grant. Close it with emu.close(). */
export async function rdHarness(opts: RdStationEmulatorOptions = {}): Promise<Harness> {
  const clock = new VirtualClock();
  const emu = await startRdStationEmulator({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    refreshTokens: [REFRESH],
    now: clock.now,
    ...opts,
  });
  // Made here, not with tmpDir(): a directory made in a beforeEach hook would be removed when the hook ends.
  const dir = mkdtempSync(join(tmpdir(), 'leadledger-rd-'));
  const sleeps: number[] = [];
  const client = (extra: HttpClientOptions = {}): HttpClient =>
    new HttpClient({
      now: clock.now,
      timeoutMs: 2000,
      maxRetries: 3,
      baseDelayMs: 100,
      random: () => 1,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock.advance(ms);
      },
      ...extra,
    });
  const h: Harness = {
    emu,
    clock,
    dir,
    credentials: join(dir, 'credentials.json'),
    sleeps,
    close: async () => {
      await emu.close();
      rmSync(dir, { recursive: true, force: true });
    },
    client,
    sink: async (o = {}) => {
      const env = o.env ?? {
        RDSTATION_CLIENT_ID: CLIENT_ID,
        RDSTATION_CLIENT_SECRET: CLIENT_SECRET,
        RDSTATION_REFRESH_TOKEN: REFRESH,
      };
      const options = rdstationOptions(
        { rdstationUrl: emu.url, credentials: h.credentials, ...(o.conversion ? { conversion: o.conversion } : {}) },
        env,
        o.config,
      );
      return openRdStationSink(options, {
        http: client(o.http),
        now: clock.now,
        ...(o.warn ? { warn: o.warn } : {}),
      });
    },
  };
  return h;
}
