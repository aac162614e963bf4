// Finding the person in a record of any shape, when no plan by field names found an email or a phone: the record is
// walked whole (nested objects at any depth, lists of answers, JSON and form-encoded documents inside strings), each
// value becomes a candidate with its path and the words of its names, and the lead's email, phone, name and company
// are chosen by what the values are (the proof: an address, a number that reads as a phone) and by what they are
// called and where they sit (the evidence: "E-mail", "celular", a buyer's and not a producer's). It looks at values,
// so it runs record by record and is never cached per shape.
import { normalizeHeader } from './fields.js';
import { readPhone } from './phones.js';
import { screenPair } from './screen.js';

/** A field found in a record: its text, where it was (a path as configs write them) and why it was chosen. */
export interface Found {
  value: string;
  path: string;
  /** The role word that chose it among others, when one did ('customer'). */
  role?: string;
  /** How the value was recognized: by its name, or by its value alone. */
  by: 'name' | 'value';
}

/**
 * What discovery found of the person; `others` lists the paths of emails found but not chosen; `screen` says why the
 * record is no lead where something in it says so (screen.ts), wherever it was.
 */
export interface Discovered {
  screen?: string;
  /** The record holds nothing but ids and flags (a ping, a notification by reference): no one to look for. */
  idsOnly?: boolean;
  email?: Found;
  phone?: Found;
  name?: Found;
  firstName?: Found;
  lastName?: Found;
  company?: Found;
  others: string[];
}

/** Limits of one record's walk: a pathological record costs a bounded amount and is then read as far as it got. */
const MAX_NODES = 5000;
const MAX_DEPTH = 24;
const MAX_PARSED = 16;
const MAX_EMBEDDED = 1 << 20;
const SCREEN_DEPTH = 3;

/** Finds the person in a record of any shape (see the file's comment); empty when it holds none. */
export function discoverPerson(record: unknown, defaultCountry?: string): Discovered {
  const walk = new Walk(record);
  walk.visit(record, [], [], 0);
  const out = choose(walk.leaves, defaultCountry);
  if (walk.screen !== undefined) out.screen = walk.screen;
  const own = walk.leaves.filter((l) => !l.words.some((ws) => ws.includes('headers')));
  if (own.length > 0 && own.every((l) => lastWords(l).some((w) => w === 'id' || w.endsWith('id')))) out.idsOnly = true;
  return out;
}

/** A scalar of the record with where it was. */
interface Leaf {
  value: string;
  /** Path segments as a config writes them: keys, `[label=…]` for an answer, `[*]` for another element. */
  path: string[];
  /** The words of every name on the way (keys, answer labels), the last one's last. */
  words: string[][];
  /** A declared type beside the value (an answer's `type: email`), normalized. */
  type?: string;
  order: number;
}

// Keys that label an answer in a list of answers, and keys that hold its value, in the order they are tried.
const LABEL_KEYS = ['label', 'title', 'question', 'name', 'key', 'field', 'fieldname', 'caption', 'questiontext'];
const VALUE_KEYS = ['value', 'answer', 'values', 'response', 'answers', 'text', 'input'];
const TYPE_KEYS = ['type', 'fieldtype', 'kind', 'inputtype'];
// Keys that refer an answer to a question defined elsewhere in the record.
const REF_KEYS = ['fieldid', 'questionid', 'id', 'ref', 'field'];

class Walk {
  readonly leaves: Leaf[] = [];
  /** The first thing in the record that says it is no lead. */
  screen: string | undefined;
  private nodes = 0;
  private parsed = 0;
  /** Questions defined somewhere in the record, by id: their label and type (answers refer to them). */
  private readonly questions = new Map<string, { label: string; type?: string }>();

  constructor(record: unknown) {
    this.collectQuestions(record, 0);
  }

  visit(v: unknown, path: string[], words: string[][], depth: number, type?: string): void {
    if (++this.nodes > MAX_NODES || depth > MAX_DEPTH) return;
    if (typeof v === 'string') return this.text(v, path, words, depth, type);
    if (typeof v === 'number') {
      if (Number.isFinite(v)) this.leaf(String(v), path, words, type);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      // A one-item list of a scalar is the scalar (a form body parsed as a map of lists: {"email": ["ana@…"]}).
      if (v.length === 1 && (typeof v[0] === 'string' || typeof v[0] === 'number'))
        return this.visit(v[0], path, words, depth + 1, type);
      for (const el of v) this.element(el, path, words, depth + 1);
      return;
    }
    const obj = v as Record<string, unknown>;
    const label = this.answerLabel(obj);
    if (label) {
      // An answer: {label: "Seu e-mail", type: "email", value: "…"}; its value is named by its label.
      const value = pick(obj, VALUE_KEYS);
      if (value !== undefined)
        return this.visit(
          value.v,
          [...path.slice(0, -1), answerSegment(path, label.key, label.text)],
          [...words, wordsOf(label.text)],
          depth + 1,
          normalizedType(obj, this.questions) ?? label.type,
        );
    }
    // A phone written in parts ({area: "11", phone: "98711-0201"}): the parts together, named as the object is.
    const area = pick(obj, ['area', 'areacode', 'ddd']);
    const number = pick(obj, ['phone', 'number', 'telefone', 'numero']);
    if (area && number && /^\d{1,4}$/.test(String(area.v).trim()) && /^[\d\s-]{6,12}$/.test(String(number.v).trim()))
      this.leaf(`${String(area.v).trim()} ${String(number.v).trim()}`, path, [
        ...words.slice(0, -1),
        [...(words[words.length - 1] ?? []), 'phone'],
      ]);
    const hint = normalizedType(obj, this.questions);
    for (const k of Object.keys(obj)) {
      // What the record says of itself sits near its top: deeper, a line item's status or a nested object's type
      // speaks for that part only.
      if (path.length < SCREEN_DEPTH) this.screen ??= screenPair(k, obj[k]);
      const q = this.questions.get(k);
      // A key that is a question's id names the value by the question's label.
      const name = q ? q.label : k;
      this.visit(
        obj[k],
        [...path, k],
        [...words, wordsOf(name)],
        depth + 1,
        q?.type ?? (isTypeKey(k) ? undefined : hint),
      );
    }
  }

  private element(el: unknown, path: string[], words: string[][], depth: number): void {
    // Elements are told apart by their label where they are answers (answerSegment), else they are any one: [*].
    this.visit(el, [...path, '[*]'], words, depth);
  }

  private text(s: string, path: string[], words: string[][], depth: number, type?: string): void {
    const t = s.trim();
    if (t.length > 1 && t.length <= MAX_EMBEDDED && this.parsed < MAX_PARSED) {
      const doc = embedded(t);
      if (doc !== undefined) {
        this.parsed++;
        this.collectQuestions(doc, 0);
        return this.visit(doc, path, words, depth + 1, type);
      }
    }
    this.leaf(t, path, words, type);
  }

  private leaf(value: string, path: string[], words: string[][], type?: string): void {
    if (value === '') return;
    const leaf: Leaf = { value, path, words, order: this.leaves.length };
    if (type !== undefined) leaf.type = type;
    this.leaves.push(leaf);
  }

  // The label of an object that is an answer: a label key holding text, beside a value key.
  private answerLabel(obj: Record<string, unknown>): { key: string; text: string; type?: string } | undefined {
    // An answer's value is text, a number or a list of them; an object under "value" is a part of the record.
    const value = pick(obj, VALUE_KEYS);
    if (value === undefined || !answerValue(value.v)) return undefined;
    const own = pick(obj, LABEL_KEYS);
    if (own && typeof own.v === 'string' && own.v.trim()) return { key: own.k, text: own.v.trim() };
    // {field: {id, label}} or {field_id: "q3"} with the question defined elsewhere.
    if (own && own.v && typeof own.v === 'object') {
      const inner = pick(own.v as Record<string, unknown>, LABEL_KEYS);
      if (inner && typeof inner.v === 'string' && inner.v.trim()) return { key: own.k, text: inner.v.trim() };
    }
    const ref = pick(obj, REF_KEYS);
    const id = ref && (typeof ref.v === 'string' || typeof ref.v === 'number') ? String(ref.v) : refId(ref?.v);
    const q = id !== undefined ? this.questions.get(id) : undefined;
    return q ? { key: ref!.k, text: q.label, type: q.type } : undefined;
  }

  // Questions (or fields) defined with an id and a label anywhere in the record, for answers that refer to them.
  private collectQuestions(v: unknown, depth: number): void {
    if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (const el of v) this.collectQuestions(el, depth + 1);
      return;
    }
    const obj = v as Record<string, unknown>;
    const id = pick(obj, ['id', 'ref', 'key', 'fieldid', 'questionid']);
    const label = pick(obj, ['title', 'label', 'question', 'name', 'text']);
    if (
      id &&
      label &&
      (typeof id.v === 'string' || typeof id.v === 'number') &&
      typeof label.v === 'string' &&
      pick(obj, VALUE_KEYS) === undefined
    ) {
      const type = pick(obj, TYPE_KEYS);
      const q: { label: string; type?: string } = { label: label.v };
      if (typeof type?.v === 'string') q.type = normalizeHeader(type.v);
      if (!this.questions.has(String(id.v))) this.questions.set(String(id.v), q);
    }
    for (const k of Object.keys(obj)) this.collectQuestions(obj[k], depth + 1);
  }
}

// Whether a value can be an answer's: a scalar, or a list of scalars.
function answerValue(v: unknown): boolean {
  if (Array.isArray(v)) return v.every((x) => x === null || typeof x !== 'object');
  return v === null || typeof v !== 'object';
}

// The id of a reference written as an object ({field: {id: "q3"}}).
function refId(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const id = pick(v as Record<string, unknown>, ['id', 'ref']);
  return id && (typeof id.v === 'string' || typeof id.v === 'number') ? String(id.v) : undefined;
}

// The first of `keys` (compared as normalizeHeader writes them) that the object has, with its value.
function pick(obj: Record<string, unknown>, keys: readonly string[]): { k: string; v: unknown } | undefined {
  let best: { k: string; v: unknown; at: number } | undefined;
  for (const k of Object.keys(obj)) {
    const at = keys.indexOf(normalizeHeader(k));
    const v = obj[k];
    if (at < 0 || v === undefined || v === null || v === '') continue;
    if (!best || at < best.at) best = { k, v, at };
  }
  return best;
}

function isTypeKey(k: string): boolean {
  return TYPE_KEYS.includes(normalizeHeader(k));
}

// The declared type of an answer or a field (`type: "email"`, a question's type), normalized.
function normalizedType(
  obj: Record<string, unknown>,
  questions: Map<string, { label: string; type?: string }>,
): string | undefined {
  const t = pick(obj, TYPE_KEYS);
  if (t && typeof t.v === 'string') return normalizeHeader(t.v);
  const ref = pick(obj, REF_KEYS);
  const id = ref && (typeof ref.v === 'string' || typeof ref.v === 'number') ? String(ref.v) : refId(ref?.v);
  return id !== undefined ? questions.get(id)?.type : undefined;
}

// The segment of an answer in a path: `[label=E-mail]` (the config's list search), or the list's [*] when the label
// cannot be written in one (brackets or a pipe in it).
function answerSegment(path: string[], key: string, label: string): string {
  return /[[\]|=]/.test(label) ? '[*]' : `[${key}=${label}]`;
}

/** The words of a name: camelCase and separators split, accents stripped, lower-cased ("E-mail" → e, mail, email). */
export function wordsOf(name: string): string[] {
  const parts = name
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  // The whole name joined too: "e-mail" and "E_mail" are "email", "first_name" is "firstname".
  const joined = parts.join('');
  return parts.length > 1 ? [...parts, joined] : parts;
}

/**
 * A document inside a string: JSON (an object or a list, possibly escaped twice, possibly after a log message's
 * prefix) or a form-encoded body (`a=1&email=ana%40x.com`, `data[email]=…`); undefined for plain text.
 */
export function embedded(t: string): unknown {
  const c = t.charCodeAt(0);
  if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
    const doc = parseJson(t);
    if (doc !== undefined) return doc;
  }
  // A log message with a JSON body after its words: "webhook received: {…}".
  const at = t.indexOf('{');
  if (at > 0 && t.charCodeAt(t.length - 1) === 0x7d) {
    const doc = parseJson(t.slice(at));
    if (doc !== undefined) return doc;
  }
  if (t.charCodeAt(0) === 0x22 /* " */) {
    // JSON escaped twice: a JSON string whose text is a document.
    const inner = parseJson(t);
    if (typeof inner === 'string') return embedded(inner.trim());
  }
  return FORM.test(t) ? parseForm(t) : undefined;
}

function parseJson(t: string): unknown {
  try {
    const v: unknown = JSON.parse(t);
    return v !== null && typeof v === 'object' ? v : typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

// key=value pairs joined by & (at least one &, or one pair whose key says what it is), keys without spaces.
const PAIR = String.raw`[A-Za-z0-9_.%+\-\[\]]+=[^&\s]*`;
const FORM = new RegExp(`^(?:${PAIR}(?:&${PAIR})+|(?:e-?mail|phone|tel|name)=[^&\\s]+)$`, 'i');

/** A form-encoded body as an object; `a[b][c]=v` nests as a.b.c; a key given twice keeps its first value. */
export function parseForm(t: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(t)) {
    const steps = k.split(/\[|\]\[|\]/).filter(Boolean);
    let cur = out;
    for (let i = 0; i < steps.length - 1; i++) {
      const s = steps[i]!;
      const next = cur[s];
      if (next === null || typeof next !== 'object') cur[s] = {};
      cur = cur[s] as Record<string, unknown>;
    }
    const last = steps[steps.length - 1] ?? k;
    if (!(last in cur)) cur[last] = v;
  }
  return out;
}

// Words that say a value is the kind of field it is.
const EMAIL_WORDS = new Set(['email', 'mail', 'emailaddress', 'correo', 'correio', 'courriel', 'contato', 'contact']);
const PHONE_WORDS = new Set([
  'phone',
  'phonenumber',
  'telephone',
  'tel',
  'telefone',
  'telefono',
  'fone',
  'celular',
  'cel',
  'cell',
  'cellphone',
  'mobile',
  'movil',
  'whatsapp',
  'wa',
  'waid',
  'msisdn',
  'sms',
  'from',
  'sender',
  'number',
  'numero',
]);
// Names of keys whose digits are an international number written without its plus (a messaging platform's ids).
const INTERNATIONAL_DIGITS = new Set(['msisdn', 'waid', 'wa', 'from', 'sender', 'whatsapp']);
const NAME_WORDS = new Set(['name', 'fullname', 'nome', 'nomecompleto', 'nombre', 'nombrecompleto', 'displayname']);
const FIRST_WORDS = new Set(['firstname', 'givenname', 'primeironome', 'prenome', 'nombres', 'first', 'fname']);
const LAST_WORDS = new Set([
  'lastname',
  'surname',
  'familyname',
  'sobrenome',
  'apellido',
  'apellidos',
  'last',
  'lname',
]);
const COMPANY_WORDS = new Set([
  'company',
  'companyname',
  'empresa',
  'organization',
  'organisation',
  'organizacao',
  'business',
  'businessname',
]);

/** Words of things whose name is not a person's (a product's name, a form's, an order's). */
const THING_WORDS = new Set([
  'product',
  'item',
  'items',
  'form',
  'page',
  'site',
  'shop',
  'store',
  'plan',
  'variant',
  'campaign',
  'list',
  'tag',
  'tags',
  'order',
  'file',
  'course',
  'offer',
  'event',
  'app',
  'logger',
  'host',
  'hostname',
  'service',
  'template',
  'title',
  'subject',
  'profileurl',
]);

/** Role words of the person a lead is about, and of the others a record names (a seller, the form's owner). */
const PERSON_ROLES = [
  'buyer',
  'customer',
  'lead',
  'contact',
  'subscriber',
  'invitee',
  'submitter',
  'person',
  'client',
  'cliente',
  'comprador',
  'respondent',
  'attendee',
  'participant',
  'payer',
  'billing',
  'prospect',
  'member',
  'contato',
  'pessoa',
  'persona',
];
const OTHER_ROLES = [
  'producer',
  'seller',
  'owner',
  'agent',
  'user',
  'admin',
  'account',
  'merchant',
  'vendor',
  'shop',
  'store',
  'host',
  'organizer',
  'organiser',
  'creator',
  'author',
  'assignee',
  'staff',
  'affiliate',
  'operator',
  'produtor',
  'vendedor',
  'responsavel',
  'responsable',
  'proprietario',
  'propietario',
  'notification',
  'notify',
  'replyto',
  'cc',
  'bcc',
];

const EMAIL_SHAPE = /^(?:mailto:)?[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[A-Za-z0-9-]{2,}$/i;
const PHONE_URI =
  /^(?:tel:|sms:|whatsapp:|callto:|https?:\/\/(?:api\.)?wa\.me\/|https?:\/\/api\.whatsapp\.com\/send\?phone=)/i;
const PHONE_CHARS = /^[+\d(][\d\s().\-/]{6,24}$/;

// How a leaf scores as the person's: role words on its path (a buyer's beats a producer's), its own name's evidence.
function roleOf(leaf: Leaf): { score: number; role?: string } {
  let score = 0;
  let role: string | undefined;
  // Names on the way to the value, the nearest first: the nearest role word speaks for it.
  for (let i = leaf.words.length - 1; i >= 0; i--) {
    for (const w of leaf.words[i]!) {
      if (PERSON_ROLES.includes(w)) {
        score += i === leaf.words.length - 1 ? 3 : 6;
        role ??= w;
      } else if (OTHER_ROLES.includes(w)) {
        score -= 6;
        role ??= w;
      }
    }
  }
  // A message's content (a contact card someone shares) is not its sender; a number it went to is the business's.
  for (const ws of leaf.words.slice(0, -1)) if (ws.includes('messages')) score -= 6;
  const last = leaf.words[leaf.words.length - 1] ?? [];
  if (last.includes('to') || last.includes('recipient')) score -= 4;
  return { score, role };
}

// How far a name's names make it a thing's (a product's name) rather than a person's: 0, or a penalty.
function thingPenalty(leaf: Leaf): number {
  let p = 0;
  const last = leaf.words.length - 1;
  leaf.words.forEach((ws, i) => {
    if (ws.some((w) => THING_WORDS.has(w))) p -= i === last ? 10 : 4;
  });
  return p;
}

function lastWords(leaf: Leaf): string[] {
  return leaf.words[leaf.words.length - 1] ?? [];
}

function has(words: string[], set: Set<string>): boolean {
  return words.some((w) => set.has(w));
}

function pathText(leaf: Leaf): string {
  let out = '';
  for (const s of leaf.path) out += s.startsWith('[') ? s : (out ? '.' : '') + s;
  return out;
}

interface Scored {
  leaf: Leaf;
  value: string;
  score: number;
  role?: string;
  by: 'name' | 'value';
}

// A score at or under this: the value is another person's (a role word of someone else on its path).
const OTHERS = -4;

function choose(leaves: Leaf[], defaultCountry?: string): Discovered {
  const emails: Scored[] = [];
  const phones: Scored[] = [];
  const countries = leaves.filter((l) => has(lastWords(l), COUNTRY_WORDS) && /^[A-Za-z]{2}$/.test(l.value));
  for (const leaf of leaves) {
    const words = lastWords(leaf);
    const named = has(words, EMAIL_WORDS) || leaf.type === 'email';
    if (EMAIL_SHAPE.test(leaf.value)) {
      const r = roleOf(leaf);
      const local = leaf.value.slice(0, leaf.value.indexOf('@')).toLowerCase();
      // An address nobody answers is never the person (a notification's sender).
      const noReply = /^(?:no-?reply|do-?not-?reply|mailer-daemon|postmaster)$/.test(local) ? -20 : 0;
      emails.push({
        leaf,
        value: leaf.value,
        score: r.score + (named ? 2 : 0) + noReply,
        role: r.role,
        by: named ? 'name' : 'value',
      });
      continue;
    }
    const phone = phoneOf(leaf, words, defaultCountry, countries.length ? countryNear(leaf, countries) : undefined);
    if (phone !== undefined) {
      const r = roleOf(leaf);
      phones.push({
        leaf,
        value: phone,
        score: r.score,
        role: r.role,
        by: PHONE_URI.test(leaf.value) && !has(words, PHONE_WORDS) ? 'value' : 'name',
      });
    }
  }
  const out: Discovered = { others: [] };
  // An address or a number that belongs to someone else by its path (a seller's, the store's) is never the lead's.
  const theirs = (c: Scored) => c.score > OTHERS;
  const email = best(emails.filter(theirs));
  if (email) {
    out.email = found(email);
    const seen = new Set([email.value.toLowerCase()]);
    for (const e of emails)
      if (!seen.has(e.value.toLowerCase())) {
        seen.add(e.value.toLowerCase());
        out.others.push(pathText(e.leaf));
      }
  }
  const anchor = email?.leaf;
  const phone = best(phones.filter(theirs), anchor);
  if (phone) out.phone = found(phone);
  const at = anchor ?? phone?.leaf;
  const textual = (set: Set<string>, type?: string) =>
    best(
      leaves
        .filter(
          (l) =>
            (has(lastWords(l), set) || (type !== undefined && l.type === type)) &&
            !l.value.includes('@') &&
            l.value.length <= 200 &&
            /\p{L}/u.test(l.value),
        )
        .map((l) => ({
          leaf: l,
          value: l.value,
          score: roleOf(l).score + thingPenalty(l),
          role: roleOf(l).role,
          by: 'name' as const,
        }))
        .filter(theirs),
      at,
    );
  const first = textual(FIRST_WORDS);
  const last = textual(LAST_WORDS);
  const name = textual(NAME_WORDS, 'name');
  // A "name" that is the first name's own key (first_name holds "first" and "name"): not the full name.
  if (name && !has(lastWords(name.leaf), FIRST_WORDS) && !has(lastWords(name.leaf), LAST_WORDS)) out.name = found(name);
  if (first) out.firstName = found(first);
  if (last) out.lastName = found(last);
  const company = textual(COMPANY_WORDS);
  if (company) out.company = found(company);
  return out;
}

// Names of a phone's own parts under a field named as a phone (Jotform's {full: "…"}).
const PHONE_PARTS = new Set(['full', 'number', 'value', 'e164', 'international', 'formatted', 'phone']);
// Names of values that are digits but never a phone.
const NOT_PHONE = new Set([
  'id',
  'zip',
  'zipcode',
  'cep',
  'postal',
  'postcode',
  'document',
  'cpf',
  'cnpj',
  'price',
  'amount',
  'total',
]);

// The phone a leaf holds, in E.164, or undefined: a tel:/WhatsApp URI, a value named as a phone, or one written with
// its calling code (+…). A national number reads in the record's own country where it names one, else the default.
function phoneOf(
  leaf: Leaf,
  words: string[],
  defaultCountry: string | undefined,
  country?: string,
): string | undefined {
  let v = leaf.value;
  const uri = PHONE_URI.exec(v);
  const parent = leaf.words[leaf.words.length - 2] ?? [];
  const named =
    has(words, PHONE_WORDS) ||
    (has(parent, PHONE_WORDS) && words.some((w) => PHONE_PARTS.has(w))) ||
    leaf.type === 'phone' ||
    leaf.type === 'phonenumber' ||
    leaf.type === 'tel';
  if (uri) v = decodeURIComponent(v.slice(uri[0].length).split(/[?&@;]/)[0]!);
  else if (!named && !(v.startsWith('+') && !words.some((w) => NOT_PHONE.has(w)))) return undefined;
  if (!PHONE_CHARS.test(v)) return undefined;
  // A messaging platform's sender id (wa_id, msisdn) is the international number without its plus.
  if (/^\d{10,15}$/.test(v) && (uri || has(words, INTERNATIONAL_DIGITS))) v = '+' + v;
  const p = readPhone(v, defaultCountry);
  if (p.kind === 'e164') return p.value;
  if (country === undefined || country === defaultCountry) return undefined;
  const q = readPhone(v, country);
  return q.kind === 'e164' ? q.value : undefined;
}

// Names of a country code beside an address or a phone (billing.country: "BR").
const COUNTRY_WORDS = new Set(['country', 'countryiso', 'countrycode', 'iso', 'pais', 'codigopais']);

// The country a record names nearest to a leaf (the most path in common), as an ISO 3166 code; undefined if none.
function countryNear(leaf: Leaf, countries: Leaf[]): string | undefined {
  let best: Leaf | undefined;
  let near = -1;
  for (const c of countries) {
    const n = common(c.path, leaf.path);
    if (n > near) {
      best = c;
      near = n;
    }
  }
  return best?.value.toUpperCase();
}

// The best of the candidates: the highest score; then, near the anchor (the most path in common with the chosen
// email), then the first in the record.
function best(cands: Scored[], anchor?: Leaf): Scored | undefined {
  let top: Scored | undefined;
  let topNear = -1;
  for (const c of cands) {
    const near = anchor ? common(c.leaf.path, anchor.path) : 0;
    if (!top || c.score > top.score || (c.score === top.score && near > topNear)) {
      top = c;
      topNear = near;
    }
  }
  return top;
}

function common(a: string[], b: string[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

function found(s: Scored): Found {
  const f: Found = { value: s.value, path: pathText(s.leaf), by: s.by };
  if (s.role !== undefined) f.role = s.role;
  return f;
}
