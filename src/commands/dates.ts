// How a run reads event times: the zone of those written without one, and the order of day and month.
import type { Config } from '../mapping/config.js';
import { checkTimezone, resolveDateOrder, type DateOrder } from '../mapping/times.js';
import type { DatesRead } from '../report/run-report.js';

/**
 * How a run reads times (push, replay --from): the zone of those without one (--timezone, the config's, else UTC) and the order of day
 * and month where a field's dates do not show it (resolveDateOrder: never from the locale, so that a date reads the
 * same on every machine).
 */
export function resolveDates(
  o: { timezone?: string; dateOrder?: DateOrder; defaultCountry?: string; defaultCountryFrom?: string },
  config: Config,
): Omit<DatesRead, 'order'> & { order: DateOrder } {
  const [timezone, timezoneFrom] = o.timezone
    ? [o.timezone, '--timezone']
    : config.timezone
      ? [checkTimezone(config.timezone, 'the config\'s "timezone"'), "the config's timezone"]
      : ['UTC', 'the default'];
  const flagCountry = o.defaultCountry ? o.defaultCountry : undefined;
  const order = resolveDateOrder({
    flag: o.dateOrder,
    config: config.dateOrder,
    country: flagCountry ?? config.defaultCountry,
    countryFrom: flagCountry ? (o.defaultCountryFrom ?? '--default-country') : "the config's defaultCountry",
  });
  return { timezone, timezoneFrom, order: order.order, orderFrom: order.from };
}
