// The Pipedrive sink's options from plain values (flags, environment, the config file's sinks.pipedrive section):
// where its API is, the token by reference, and how leads land in Pipedrive. The sink registry's definition feeds
// this from --pipedrive-domain, --pipedrive-url / LEADLEDGER_PIPEDRIVE_URL, PIPEDRIVE_TOKEN or --token-file.
import { z } from 'zod';
import { UsageError } from '../../errors.js';
import { readToken } from '../transport/token.js';
import { pipedriveConfigSchemaOf, type PipedriveConfig } from './config.js';
import type { PipedriveSinkOptions } from './pipedrive.js';

/** The config file's sinks.pipedrive section; unknown keys are errors (config.ts). */
export const pipedriveConfigSchema = pipedriveConfigSchemaOf(z);
export type { PipedriveConfig };

/** The plain values the options come from. */
export interface PipedriveOptionValues {
  /** --pipedrive-domain */
  domain?: string;
  /** --pipedrive-url, or LEADLEDGER_PIPEDRIVE_URL (a flag wins over the environment). */
  url?: string;
  /** --token-file (wins over PIPEDRIVE_TOKEN). */
  tokenFile?: string;
  /** The environment (PIPEDRIVE_TOKEN, LEADLEDGER_PIPEDRIVE_URL). */
  env: Record<string, string | undefined>;
  /** The config file's sinks.pipedrive section, unvalidated. */
  config?: unknown;
  allowInsecure?: boolean;
  /** Told when the token file may be read by others than its owner. */
  warn?: (message: string) => void;
}

// A Pipedrive company domain: one DNS label.
const COMPANY = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/**
 * https://<company>.pipedrive.com from a domain as a user writes it: "acme", "acme.pipedrive.com" or
 * "https://acme.pipedrive.com/"; UsageError for anything else.
 */
export function pipedriveBaseUrl(domain: string): string {
  const d = domain
    .trim()
    .replace(/^https?:\/\//i, '')
    .replace(/\/+$/, '')
    .replace(/\.pipedrive\.com$/i, '');
  if (!COMPANY.test(d))
    throw new UsageError(
      `the Pipedrive company domain must be its name, as in https://<name>.pipedrive.com (got "${domain}"); use --pipedrive-url for any other address`,
    );
  return `https://${d.toLowerCase()}.pipedrive.com`;
}

/** Parse the config section; UsageError naming the key at fault. */
export function parsePipedriveConfig(config: unknown): PipedriveConfig {
  if (config === undefined) return {};
  const r = pipedriveConfigSchema.safeParse(config);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const at = issue?.path.length ? `sinks.pipedrive.${issue.path.join('.')}` : 'sinks.pipedrive';
  throw new UsageError(`config ${at}: ${issue?.message ?? 'invalid'}`);
}

/**
 * Everything the sink needs but its HTTP client: the base URL (URL flag or environment, else the domain flag, else
 * the config's url, else its domain), the token (file, else PIPEDRIVE_TOKEN) and the config's mapping.
 */
export async function readPipedriveOptions(values: PipedriveOptionValues): Promise<Omit<PipedriveSinkOptions, 'http'>> {
  const cfg = parsePipedriveConfig(values.config);
  const url = values.url ?? values.env.LEADLEDGER_PIPEDRIVE_URL?.trim() ?? undefined;
  let baseUrl: string;
  if (url) baseUrl = url;
  else if (values.domain !== undefined) baseUrl = pipedriveBaseUrl(values.domain);
  else if (cfg.url !== undefined) baseUrl = cfg.url;
  else if (cfg.domain !== undefined) baseUrl = pipedriveBaseUrl(cfg.domain);
  else
    throw new UsageError(
      'Pipedrive needs the company domain: --pipedrive-domain <name> (for https://<name>.pipedrive.com), or sinks.pipedrive.domain in the config',
    );
  const token = await readToken({
    env: values.env,
    envName: 'PIPEDRIVE_TOKEN',
    what: 'Pipedrive',
    ...(values.tokenFile !== undefined ? { tokenFile: values.tokenFile } : {}),
    ...(values.warn ? { warn: values.warn } : {}),
  });
  const { domain: _d, url: _u, lead, ...mapping } = cfg;
  return {
    token,
    baseUrl,
    ...(values.allowInsecure !== undefined ? { allowInsecure: values.allowInsecure } : {}),
    ...mapping,
    ...(lead ? { lead } : {}),
  };
}
