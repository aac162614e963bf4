// The {{placeholders}} a webhook template may use (body.ts renderTemplate fills them), and the check of a config's
// template against them: a misspelt one is an error that names the nearest known name.
import { closest } from '../../did-you-mean.js';
import type { ConfigIssue } from '../definition.js';

/** A placeholder in a template string. */
export const PLACEHOLDER = /\{\{\s*([\w.]+)\s*\}\}/g;

const TEMPLATE_NAMES = [
  'downstream_key',
  'event_key_hash',
  'occurred_at',
  'lead',
  'lead.custom',
  'lead.email',
  'lead.phone',
  'lead.name',
  'lead.first_name',
  'lead.firstName',
  'lead.last_name',
  'lead.lastName',
  'lead.company',
  'lead.source',
];

/** The unknown placeholders of a template, each with the path of the string that holds it and the nearest name. */
export function templateIssues(template: unknown, custom: readonly string[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const { at, name } of templatePlaceholders(template)) {
    if (placeholderKnown(name, custom)) continue;
    const near = closest(name, placeholderNames(custom));
    issues.push({
      path: ['template', ...at],
      message: `unknown placeholder {{${name}}}${near ? ` (did you mean {{${near}}}?)` : ''}`,
    });
  }
  return issues;
}

/** Every {{placeholder}} of a webhook template, with the path of the string that holds it. */
function templatePlaceholders(template: unknown): Array<{ at: Array<string | number>; name: string }> {
  const out: Array<{ at: Array<string | number>; name: string }> = [];
  const walk = (v: unknown, at: Array<string | number>): void => {
    if (typeof v === 'string') for (const m of v.matchAll(PLACEHOLDER)) out.push({ at, name: m[1]! });
    else if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...at, i]));
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, [...at, k]);
  };
  walk(template, []);
  return out;
}

// The names a template may use, for a config's custom fields.
function placeholderNames(custom: readonly string[]): string[] {
  return [...TEMPLATE_NAMES, ...custom.flatMap((c) => [`lead.custom.${c}`, `lead.${c}`])];
}

function placeholderKnown(name: string, custom: readonly string[]): boolean {
  if (TEMPLATE_NAMES.includes(name)) return true;
  const c = name.startsWith('lead.custom.') ? name.slice(12) : name.startsWith('lead.') ? name.slice(5) : undefined;
  return c !== undefined && custom.includes(c);
}
