// How `leadledger doctor` reads the answer to a sink's one cheap request: one rule for every HTTP sink.
import type { SinkCheck } from '../types.js';
import type { HttpResult } from './http.js';

/** What a sink says of its own answers: what an ok means, and what to do about refused credentials. */
export interface CheckWords {
  /** After "<destination> answered: ", what a 2xx showed (the token reads contacts, ...). */
  ok: string;
  /** What to do when the credentials are refused (401) or lack a permission (403). */
  credentialsHint: string;
  /** The CRM's own words of a refusal, from its body (redacted); optional. */
  said?: (text: string) => string | undefined;
  /** Statuses that still mean the destination answers as it should (a webhook's 405 to HEAD). */
  fine?: readonly number[];
}

/** A SinkCheck from the result of the check's request (no retry: doctor answers in seconds). */
export function checkAnswer(where: string, r: HttpResult, words: CheckWords): SinkCheck {
  if (r.kind === 'failure')
    return {
      status: 'fail',
      message: `${where} could not be reached: ${r.failure.reason}`,
      hint: 'check the URL, the network, a proxy or a firewall',
    };
  const { status, text } = r.response;
  const said = words.said?.(text);
  const detail = said ? `: ${said}` : '';
  if ((status >= 200 && status < 300) || words.fine?.includes(status))
    return { status: 'ok', message: `${where} answered (${status}): ${words.ok}` };
  if (status === 401)
    return {
      status: 'fail',
      message: `${where} refused the credentials (401)${detail}`,
      hint: words.credentialsHint,
      exitCode: 4,
    };
  if (status === 403)
    return {
      status: 'fail',
      message: `${where} took the credentials but refused them this (403: a permission or scope missing)${detail}`,
      hint: words.credentialsHint,
      exitCode: 4,
    };
  if (status === 429)
    return {
      status: 'warn',
      message: `${where} answered 429 (rate-limited right now)${detail}`,
      hint: 'a push waits for the limit; if it lasts, another tool may be spending the budget',
    };
  if (status >= 500)
    return {
      status: 'warn',
      message: `${where} answered ${status}${detail}`,
      hint: 'the CRM has trouble now: a push retries, and fails what does not get through',
    };
  return {
    status: 'fail',
    message: `${where} answered ${status}${detail}`,
    hint: status === 404 ? 'no such API at this URL: check the URL' : 'check the URL and the settings',
  };
}
