// The config file's sinks.zoho section, made with the zod given: the definition (loaded by --help) names this schema
// without loading zod itself.
import type { z as Zod } from 'zod';

/** Zoho's data centres: the domain suffix of each (accounts and API hosts differ by it). */
export const ZOHO_DATA_CENTRES = ['com', 'eu', 'in', 'com.au', 'jp', 'ca', 'com.cn'] as const;
export type ZohoDataCentre = (typeof ZOHO_DATA_CENTRES)[number];

/** The sinks.zoho section's schema (unknown keys are errors). */
export function zohoConfigSchemaOf(z: typeof Zod) {
  return z
    .object({
      /** The API base URL (a proxy, the sandbox); its OAuth token endpoint is /oauth/v2/token under it. */
      url: z.string().min(1).optional(),
      /** The account's data centre: com (default), eu, in, com.au, jp, ca, com.cn. */
      dataCentre: z.enum(ZOHO_DATA_CENTRES).optional(),
      /** A lead without a last name or company (both required in Leads): sent with a default, or failed alone. */
      missingRequired: z.enum(['default', 'fail']).optional(),
      /** The defaults of Last_Name and Company (default "[not provided]"). */
      defaults: z
        .object({ lastName: z.string().trim().min(1).optional(), company: z.string().trim().min(1).optional() })
        .strict()
        .optional(),
      /** The Leads field (API name) that receives the lead's source, e.g. Lead_Source; not sent when unset. */
      sourceField: z.string().min(1).optional(),
      /** Lead custom field name → Leads field API name. */
      fields: z.record(z.string(), z.string().min(1)).optional(),
      /** Zoho's automation run for each record written (default: Zoho's own, all of them). */
      trigger: z.array(z.enum(['workflow', 'approval', 'blueprint'])).optional(),
      /** Requests in flight at once: the edition's concurrency cap (default 10). */
      concurrency: z.number().int().positive().optional(),
      /** API credits left unspent in the 24 h window (default 5% of the account's credits once Zoho tells them). */
      creditsReserve: z.number().int().nonnegative().optional(),
    })
    .strict();
}

/** The sinks.zoho section, validated. */
export type ZohoConfig = Zod.infer<ReturnType<typeof zohoConfigSchemaOf>>;
