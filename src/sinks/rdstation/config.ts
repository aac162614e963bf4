// The config file's sinks.rdstation section, made with the zod it is given: the definition (loaded by --help) names
// this schema without loading zod itself.
import type { z as Zod } from 'zod';

/** The sinks.rdstation section's schema (unknown keys are errors). */
export function rdstationConfigSchemaWith(z: typeof Zod) {
  const legalBasis = z
    .object({
      category: z.literal('communications'),
      type: z.enum([
        'consent',
        'legitimate_interest',
        'judicial_process',
        'vital_interest',
        'public_interest',
        'pre_existent_contract',
      ]),
      status: z.enum(['granted', 'declined']).optional(),
    })
    .strict();
  return z
    .object({
      /** The API base URL when neither --rdstation-url nor LEADLEDGER_RDSTATION_URL gives one. */
      url: z.string().min(1).optional(),
      conversionIdentifier: z.string().trim().min(1).optional(),
      phoneField: z.enum(['mobile_phone', 'personal_phone']).optional(),
      fields: z.record(z.string().min(1), z.string().min(1)).optional(),
      tags: z.array(z.string().trim().min(1)).optional(),
      legalBases: z.array(legalBasis).optional(),
      keyField: z
        .union([z.string().regex(/^cf_[a-z0-9_]+$/, 'a custom field: cf_ then its API identifier'), z.literal(false)])
        .optional(),
      requestsPerMinute: z.number().int().positive().optional(),
    })
    .strict();
}
