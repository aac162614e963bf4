// The config file's sinks.pipedrive section, made with the zod given: the definition (loaded by --help) stays free of
// zod, which is loaded only when a config file is read.
import type { z as Zod } from 'zod';

/** The schema of sinks.pipedrive; unknown keys are errors. */
export function pipedriveConfigSchemaOf(z: typeof Zod) {
  return z
    .object({
      /** The company domain: "acme" for https://acme.pipedrive.com. */
      domain: z.string().min(1).optional(),
      /** The API base URL, instead of the domain (a proxy, a sandbox). */
      url: z.string().min(1).optional(),
      /** Create a Pipedrive lead with each person created. */
      lead: z
        .object({
          title: z.string().min(1).optional(),
          labelIds: z.array(z.uuid()).optional(),
          ownerId: z.number().int().positive().optional(),
        })
        .strict()
        .optional(),
      ownerId: z.number().int().positive().optional(),
      visibleTo: z.number().int().positive().optional(),
      emailLabel: z.string().min(1).optional(),
      phoneLabel: z.string().min(1).optional(),
      sourceField: z.string().min(1).optional(),
      companyField: z.string().min(1).optional(),
      /** Lead custom field name → person custom field key (40 characters). */
      customFields: z.record(z.string(), z.string().min(1)).optional(),
      /** Daily budget tokens kept unspent (default 5%). */
      dailyReserve: z.number().int().nonnegative().optional(),
      /** Requests per 2 s assumed before Pipedrive's headers tell. */
      burst: z.number().int().positive().optional(),
    })
    .strict();
}

/** The sinks.pipedrive section, validated. */
export type PipedriveConfig = Zod.infer<ReturnType<typeof pipedriveConfigSchemaOf>>;
