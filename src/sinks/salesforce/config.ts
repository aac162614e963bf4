// The config file's sinks.salesforce section, made with the zod it is given: the definition (loaded by --help) names
// this schema without loading zod itself.
import type { z as Zod } from 'zod';

/** The sinks.salesforce section's schema (unknown keys are errors). */
export function salesforceConfigSchemaWith(z: typeof Zod) {
  const apiName = z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/, 'a field API name (Leadledger_Key__c)');
  return z
    .object({
      /** The instance URL when neither --salesforce-url nor LEADLEDGER_SALESFORCE_URL gives one. */
      url: z.string().min(1).optional(),
      /** Where tokens are asked for when no instance URL is given (https://test.salesforce.com for a sandbox org). */
      loginUrl: z.string().min(1).optional(),
      /** REST API version, v62.0 by default. */
      apiVersion: z
        .string()
        .regex(/^v?\d+\.\d$/, 'a version such as v62.0')
        .optional(),
      /** The External ID (Unique) field upserts are keyed on; false: no such field, create after a lookup by email. */
      externalIdField: z.union([apiName, z.literal(false)]).optional(),
      /** A lead without a last name or company: sent with the placeholder (default) or failed alone. */
      missingRequired: z.enum(['placeholder', 'fail']).optional(),
      /** What stands for a missing LastName or Company (default "[not provided]"). */
      placeholder: z.string().trim().min(1).max(80).optional(),
      /** The Lead field that takes lead.source (default LeadSource); false: not written. */
      sourceField: z.union([apiName, z.literal(false)]).optional(),
      /** The lead's custom fields (by the config's names) to Lead field API names. */
      fields: z.record(z.string().min(1), apiName).optional(),
      /** The JWT bearer flow's user (with --salesforce-jwt-key): the Salesforce username the app acts as. */
      username: z.string().min(1).optional(),
      /** Daily API requests kept for the org's other integrations (default 5% of the allowance). */
      reserve: z.number().int().nonnegative().optional(),
    })
    .strict();
}

/** The section as the sink reads it. */
export type SalesforceConfig = Zod.infer<ReturnType<typeof salesforceConfigSchemaWith>>;
