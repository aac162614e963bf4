// `leadledger sandbox`: run the emulator in the foreground until SIGINT/SIGTERM/SIGHUP (or the caller's signal).
import { UsageError } from '../errors.js';
import { startEmulator, type EmulatorOptions } from './emulator.js';
import type { Faults } from './faults.js';
import { startPipedriveEmulator } from './pipedrive-api.js';
import { startRdStationEmulator } from './rdstation-emulator.js';
import { startSalesforceEmulator } from './salesforce-api.js';
import { parseRateLimit } from './rolling-window.js';
import { startZohoEmulator } from './zoho-api.js';

/** The sandbox's RD Station app and grant: test values, printed in its banner, accepted by nothing but the sandbox. */
export const SANDBOX_RDSTATION = {
  clientId: 'leadledger-sandbox-client',
  clientSecret: 'leadledger-sandbox-secret',
  refreshToken: 'leadledger-sandbox-refresh',
  accessToken: 'leadledger-sandbox-access',
} as const;

/** The sandbox's Zoho CRM Self Client and grant: test values, printed in its banner, accepted by the sandbox only. */
export const SANDBOX_ZOHO = {
  clientId: 'leadledger-sandbox-zoho-client',
  clientSecret: 'leadledger-sandbox-zoho-secret',
  refreshToken: 'leadledger-sandbox-zoho-refresh',
  accessToken: 'leadledger-sandbox-zoho-access',
} as const;

/** The sandbox's Salesforce connected app and grant: test values, printed in its banner. */
export const SANDBOX_SALESFORCE = {
  clientId: 'leadledger-sandbox-sf-client',
  clientSecret: 'leadledger-sandbox-sf-secret',
  refreshToken: 'leadledger-sandbox-sf-refresh',
  accessToken: 'leadledger-sandbox-sf-access',
} as const;

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface SandboxOptions {
  port?: number;
  host?: string;
  /** Env var holding the bearer token to require; when absent any bearer token is accepted. */
  tokenEnv?: string;
  /** Added latency per request (ms). */
  latency?: number;
  /** e.g. "100/10s". */
  rateLimit?: string;
  /** The RD Station account's limit, e.g. "120/1m" (the default, RD's lower plans). */
  rdstationRateLimit?: string;
  /** Fault settings (rates, outage...), as for POST /__admin/faults. */
  faults?: Faults;
  seed?: number;
  customProperties?: string[];
  /** Webhook receiver: env var with the HMAC secret to verify. */
  webhookSecretEnv?: string;
  honourIdempotencyKey?: boolean;
  env?: Record<string, string | undefined>;
  /** Where the banner goes (default stderr). */
  log?: (line: string) => void;
  /** Stop when aborted (tests); SIGINT/SIGTERM/SIGHUP also stop it. */
  signal?: AbortSignal;
}

/** Start the emulator, print its URL and admin endpoints, and resolve once it was stopped. */
export async function runSandbox(options: SandboxOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  let token: string | undefined;
  if (options.tokenEnv) {
    token = env[options.tokenEnv]?.trim();
    if (!token) throw new UsageError(`--token-env ${options.tokenEnv}: that variable is not set`);
  }
  let secret: string | undefined;
  if (options.webhookSecretEnv) {
    secret = env[options.webhookSecretEnv];
    if (!secret) throw new UsageError(`--webhook-secret-env ${options.webhookSecretEnv}: that variable is not set`);
  }
  let rateLimit: EmulatorOptions['rateLimit'];
  try {
    rateLimit = options.rateLimit ? parseRateLimit(options.rateLimit) : undefined;
  } catch (err) {
    throw new UsageError(`--rate-limit: ${(err as Error).message}`);
  }
  // Pipedrive's emulator answers /api/v2 and /v1 on the same port (HubSpot's routes are /crm); its admin routes are
  // under /__admin/pipedrive/. It takes any x-api-token, or the one of --token-env.
  const pipedrive = await startPipedriveEmulator({
    ...(token !== undefined ? { token } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    faults: { ...options.faults, ...(options.latency !== undefined ? { latencyMs: options.latency } : {}) },
  });
  const pipedriveAdmin = '/__admin/pipedrive/';
  let rdLimit: { max: number; intervalMs: number } | undefined;
  try {
    rdLimit = options.rdstationRateLimit ? parseRateLimit(options.rdstationRateLimit) : undefined;
  } catch (err) {
    throw new UsageError(`--rdstation-rate-limit: ${(err as Error).message}`);
  }
  // RD Station's emulator is served on the sandbox's port: its /platform, /auth and /__admin/rdstation routes are
  // its own (HubSpot's are under /crm); its own listener on another loopback port is not announced.
  const rd = await startRdStationEmulator({
    clientId: SANDBOX_RDSTATION.clientId,
    clientSecret: SANDBOX_RDSTATION.clientSecret,
    refreshTokens: [SANDBOX_RDSTATION.refreshToken],
    accessTokens: [SANDBOX_RDSTATION.accessToken],
    ...(rdLimit ? { rateLimit: rdLimit } : {}),
    faults: { ...options.faults, ...(options.latency !== undefined ? { latencyMs: options.latency } : {}) },
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  // Zoho CRM's emulator too: its /crm/v8, /oauth/v2 and /__admin/zoho routes (HubSpot's are /crm/v3).
  const zoho = await startZohoEmulator({
    clientId: SANDBOX_ZOHO.clientId,
    clientSecret: SANDBOX_ZOHO.clientSecret,
    refreshTokens: [SANDBOX_ZOHO.refreshToken],
    accessTokens: [SANDBOX_ZOHO.accessToken],
    faults: { ...options.faults, ...(options.latency !== undefined ? { latencyMs: options.latency } : {}) },
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  // Salesforce's emulator answers /services (its token endpoint and REST API) and /__admin/salesforce on this port.
  const sf = await startSalesforceEmulator({
    clientId: SANDBOX_SALESFORCE.clientId,
    clientSecret: SANDBOX_SALESFORCE.clientSecret,
    refreshTokens: [SANDBOX_SALESFORCE.refreshToken],
    accessTokens: [SANDBOX_SALESFORCE.accessToken],
    faults: { ...options.faults, ...(options.latency !== undefined ? { latencyMs: options.latency } : {}) },
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  const emulator = await startEmulator({
    mounts: [
      {
        claims: (path) => /^\/(crm\/v8|oauth\/v2|__admin\/zoho)(\/|$)/.test(path),
        listener: zoho.listener,
      },
      {
        prefixes: ['/api/v2/', '/v1/', pipedriveAdmin],
        handle: (req, res, raw) => {
          if (req.url?.startsWith(pipedriveAdmin)) req.url = `/__admin/${req.url.slice(pipedriveAdmin.length)}`;
          return pipedrive.handle(req, res, raw);
        },
      },
      {
        claims: (path) => /^\/(platform|auth|__admin\/rdstation)(\/|$)/.test(path),
        listener: rd.listener,
      },
      { prefixes: ['/services/', '/__admin/salesforce/'], handle: (req, res, raw) => sf.handle(req, res, raw) },
    ],
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(rateLimit ? { rateLimit } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.customProperties ? { customProperties: options.customProperties } : {}),
    faults: { ...options.faults, ...(options.latency !== undefined ? { latencyMs: options.latency } : {}) },
    webhook: {
      ...(secret !== undefined ? { secret } : {}),
      ...(options.honourIdempotencyKey !== undefined ? { honourIdempotencyKey: options.honourIdempotencyKey } : {}),
    },
  })
    .catch((err: NodeJS.ErrnoException) => {
      // A port in use, or one this user may not take (below 1024), is the user's to change: said as such.
      const where = `${options.host ?? '127.0.0.1'}:${options.port ?? 0}`;
      if (err.code === 'EADDRINUSE')
        throw new UsageError(`--port ${options.port}: ${where} is already in use (another sandbox?)`);
      if (err.code === 'EACCES') throw new UsageError(`--port ${options.port}: not allowed to listen on ${where}`);
      if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
        throw new UsageError(`--host ${options.host}: no such address on this machine (${err.code})`);
      throw err;
    })
    .catch(async (err: unknown) => {
      await pipedrive.close();
      await rd.close();
      await zoho.close();
      await sf.close();
      throw err;
    });
  // The signals are taken before anything is printed: once "Press Ctrl-C" is out, Ctrl-C (or SIGTERM, or a closed
  // terminal's SIGHUP) stops the server; before, it would have ended the process as Node's default does.
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => {
      for (const s of STOP_SIGNALS) process.off(s, stop);
      options.signal?.removeEventListener('abort', stop);
      resolve();
    };
    for (const s of STOP_SIGNALS) process.on(s, stop);
    if (options.signal?.aborted) stop();
    else options.signal?.addEventListener('abort', stop, { once: true });
  });
  const u = emulator.url;
  log(`leadledger sandbox listening on ${u}`);
  log(
    `  HubSpot API:   ${u}/crm/v3/objects/contacts  (use --hubspot-url ${u}; token ${token ? `from $${options.tokenEnv}` : 'any bearer token'})`,
  );
  log(
    `  Pipedrive API: ${u}/api/v2/persons  (use --pipedrive-url ${u}; token ${token ? `from $${options.tokenEnv}` : 'any x-api-token'})`,
  );
  log(`  webhook:       ${u}/webhook  and  ${u}/hooks/*`);
  log(
    `  RD Station:    ${u}/platform  (use --rdstation-url ${u}; limit ${rdLimit ? `${rdLimit.max} per ${rdLimit.intervalMs / 1000} s` : '120 per minute'})`,
  );
  log(
    `                 test app: RDSTATION_CLIENT_ID=${SANDBOX_RDSTATION.clientId} RDSTATION_CLIENT_SECRET=${SANDBOX_RDSTATION.clientSecret}`,
  );
  log(
    `                 RDSTATION_REFRESH_TOKEN=${SANDBOX_RDSTATION.refreshToken} (once: leadledger auth rdstation keeps the rotated one), or RDSTATION_ACCESS_TOKEN=${SANDBOX_RDSTATION.accessToken}`,
  );
  log(`                 admin: GET ${u}/__admin/rdstation/conversions | /contacts | /stats`);
  zoho.setApiDomain(u);
  log(`  Zoho CRM:      ${u}/crm/v8/Leads  (use --zoho-url ${u}; token endpoint ${u}/oauth/v2/token)`);
  log(
    `                 test client: ZOHO_CLIENT_ID=${SANDBOX_ZOHO.clientId} ZOHO_CLIENT_SECRET=${SANDBOX_ZOHO.clientSecret} ZOHO_REFRESH_TOKEN=${SANDBOX_ZOHO.refreshToken}`,
  );
  log(`                 admin: GET ${u}/__admin/zoho/leads | /stats | POST /faults | /expire-tokens | /code | /reset`);
  log(
    `  Salesforce:    ${u}/services/data  (use --salesforce-url ${u}; Lead has Leadledger_Key__c, External ID and Unique)`,
  );
  log(
    `                 test app: SALESFORCE_CLIENT_ID=${SANDBOX_SALESFORCE.clientId} SALESFORCE_CLIENT_SECRET=${SANDBOX_SALESFORCE.clientSecret}`,
  );
  log(
    `                 SALESFORCE_REFRESH_TOKEN=${SANDBOX_SALESFORCE.refreshToken}, or SALESFORCE_ACCESS_TOKEN=${SANDBOX_SALESFORCE.accessToken}`,
  );
  log(`                 admin: GET|POST ${u}/__admin/salesforce/leads | GET /stats | POST /faults | /reset`);
  log(`  admin:         GET ${u}/__admin/contacts | /__admin/webhooks | /__admin/stats`);
  log(`                 POST ${u}/__admin/faults (JSON) | POST ${u}/__admin/reset`);
  log(
    `                 POST ${u}/__admin/contacts (JSON [{"properties":{"email":...}}]: people the CRM already holds)`,
  );
  log(`                 Pipedrive: GET|POST ${u}/__admin/pipedrive/persons | /stats | POST /faults | /reset`);
  log('Press Ctrl-C to stop.');
  await stopped;
  await emulator.close();
  await pipedrive.close();
  await rd.close();
  await zoho.close();
  await sf.close();
  log('sandbox stopped');
}
