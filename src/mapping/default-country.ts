// The country national phone numbers (written without a calling code) are read in, and where it came from:
// --default-country (or its environment variable), then the config's defaultCountry, then the region of the locale.
import metadataJson from 'libphonenumber-js/metadata.min.json';
import { UsageError } from '../errors.js';

/** The default country of a run, and where it came from in words (`--default-country`, `LANG=pt_BR.UTF-8`). */
export interface DefaultCountry {
  country?: string;
  from?: string;
}

/** Where the default country may come from; `env` is the command's (CommandContext.env), never read here. */
export interface CountrySources {
  /** --default-country's value, and where commander took it from (the flag, or LEADLEDGER_DEFAULT_COUNTRY). */
  flag?: string;
  flagFrom?: string;
  /** The config's defaultCountry (validated with the config). */
  config?: string;
  env: Record<string, string | undefined>;
}

/** Whether libphonenumber knows this ISO 3166 code (its metadata lists a numbering plan for it). */
export function isPhoneCountry(code: string): boolean {
  return Object.prototype.hasOwnProperty.call(metadataJson.countries, code);
}

/** The default country: flag, then config, then the locale; a flag naming no known country is a usage error. */
export function resolveDefaultCountry(s: CountrySources): DefaultCountry {
  if (s.flag !== undefined && s.flag !== '') {
    const from = s.flagFrom ?? '--default-country';
    const country = s.flag.trim().toUpperCase();
    if (!isPhoneCountry(country))
      throw new UsageError(
        `${from} '${s.flag}' is not an ISO 3166 country code known for phone numbers (e.g. BR, US, PT)`,
      );
    return { country, from };
  }
  if (s.config) return { country: s.config.toUpperCase(), from: "the config's defaultCountry" };
  return localeCountry(s.env);
}

// POSIX: LC_ALL overrides the category's own variable, which overrides LANG; a variable set to '' counts as unset.
// The category is LC_TELEPHONE (glibc's, for telephone formats): a desktop set to English with Brazilian formats
// has LANG=en_US.UTF-8 and LC_TELEPHONE=pt_BR.UTF-8, and its phones are Brazilian. LC_MESSAGES says only which
// language messages are in, not where the phones come from.
const LOCALE_VARIABLES = ['LC_ALL', 'LC_TELEPHONE', 'LANG'] as const;

// language[_territory][.codeset][@modifier]: pt_BR.UTF-8, en_US, sr_RS@latin. C, POSIX and C.UTF-8 have no
// territory; es_419 (a UN M.49 region, not a country) matches nothing.
const LOCALE = /^[A-Za-z]{2,3}_([A-Za-z]{2})(?:[.@]|$)/;

/**
 * The region of the locale in effect, when libphonenumber knows it as a country. The first variable set decides
 * the locale: LC_ALL=C means the C locale, whatever LANG says, so no country.
 */
export function localeCountry(env: Record<string, string | undefined>): DefaultCountry {
  for (const name of LOCALE_VARIABLES) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    const region = LOCALE.exec(v)?.[1]?.toUpperCase();
    // An unknown region (en_XX, or en_UK for GB) is ignored, as a locale without one would be.
    if (region === undefined || !isPhoneCountry(region)) return {};
    return { country: region, from: `${name}=${v}` };
  }
  return {};
}
