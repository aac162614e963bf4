// What a column's name says it holds, read from its words: a CSV header as localized exports write it (an object
// prefix and a label, "Person - Email - Work", "Pessoa - E-mail - Trabalho", "Persona - Correo electrónico - Trabajo",
// "Contato principal: Telefone comercial", "Teléfono móvil (contacto)"), a question's title ("Seu melhor e-mail"), or
// a JSON key (contact_email, mobilePhone). Headers are split into words (separators and camelCase, accents stripped,
// lower-cased) and matched against a closed vocabulary in English, Portuguese and Spanish: a name with a word outside
// it ("Accepts Email Marketing", "email_verified", "Documento do comprador") says nothing, and is left to discovery,
// which reads values. It depends on the name alone, so a field plan built from it holds for every record of a shape.

/** The lead fields a column's name can give. */
export type RoleField = 'email' | 'phone' | 'name' | 'firstName' | 'lastName' | 'company';

/** Whose a column is: the lead's person, nobody named, an organization, or someone else (an owner, a seller). */
export type Whose = 'person' | 'plain' | 'org' | 'other';

/** What a column's label says of an email or a phone. */
export type Label = 'primary' | 'mobile' | 'plain' | 'work' | 'home' | 'other' | 'address';

/** What a column's name says it holds. `roleOnly`: a name that is a person's role alone ("Comprador"). */
export interface ColumnRole {
  field: RoleField;
  whose: Whose;
  label: Label;
  roleOnly?: boolean;
  /** A bare "Name"/"Nome"/"Nombre": a first name where the same shape has a last-name column. */
  bareName?: boolean;
}

/**
 * The order in which the columns of one field are tried: the person's before nobody's, an organization's last (an
 * owner's never); then by label. An email: the primary, an unlabelled one, work, personal or home, other. A phone:
 * the primary, a mobile (it is the number a lead answers and texts on), an unlabelled one, work, home, other, an
 * address's phone (a shipping address's, Shopify's "Default Address Phone").
 */
export const WHOSE_ORDER: Readonly<Record<Whose, number>> = { person: 0, plain: 1, org: 2, other: 3 };
export const EMAIL_LABEL_ORDER: Readonly<Record<Label, number>> = {
  primary: 0,
  plain: 1,
  work: 2,
  home: 3,
  other: 4,
  mobile: 5,
  address: 6,
};
export const PHONE_LABEL_ORDER: Readonly<Record<Label, number>> = {
  primary: 0,
  mobile: 1,
  plain: 2,
  work: 3,
  home: 4,
  other: 5,
  address: 6,
};

const set = (words: string): ReadonlySet<string> => new Set(words.split(/\s+/).filter(Boolean));

const EMAIL = set('email emails mail correo correos correio courriel');
const PHONE = set(
  'phone phones telephone tel telefone telefones telefono telefonos fone celular celulares cel cell cellular mobile movil whatsapp wpp smartphone',
);
const FAX = set('fax');
const NAME = set('name names nome nombre');
const COMPANY = set('company empresa organization organisation organizacao organizacion org account razao business');
// First and last names: one word, or two in a row ("first name", "primeiro nome").
const FIRST = set('prenome nombres fname');
const LAST = set('surname sobrenome apellido apellidos lname');
const FIRST_PAIRS = ['first name', 'given name', 'primeiro nome'];
const LAST_PAIRS = ['last name', 'family name', 'ultimo nome'];
// A middle name ("Segundo nome", "Middle name") is neither.
const MIDDLE = set('middle segundo meio');
// Names written as one word, by their words ("emailaddress", "telefonecelular": keys without separators or case).
const COMPOUNDS = new Map(
  Object.entries({
    emailaddress: 'email address',
    enderecodeemail: 'endereco de email',
    emailprincipal: 'email principal',
    phonenumber: 'phone number',
    mobilephone: 'mobile phone',
    mobilephonenumber: 'mobile phone number',
    cellphone: 'cell phone',
    telefonecelular: 'telefone celular',
    numerodetelefone: 'numero de telefone',
    fullname: 'full name',
    nomecompleto: 'nome completo',
    nombrecompleto: 'nombre completo',
    displayname: 'display name',
    contactname: 'contact name',
    leadname: 'lead name',
    firstname: 'first name',
    givenname: 'given name',
    primeironome: 'primeiro nome',
    lastname: 'last name',
    familyname: 'family name',
    ultimonome: 'ultimo nome',
    middlename: 'middle name',
    companyname: 'company name',
    nomedaempresa: 'nome da empresa',
    accountname: 'account name',
    businessname: 'business name',
  }).map(([k, v]) => [k, v.split(' ')]),
);
// Words a name's case splits that are one ("WhatsApp").
const SPLIT = new Map([['whats app', 'whatsapp']]);

// The person a lead is about, in the roles exports give them.
const PERSON = set(
  'person persona pessoa contact contacto contato cliente client customer comprador compradora buyer attendee participante participant lead subscriber assinante inscrito inscrita aluno aluna alumno alumna student paciente patient respondent member membro miembro titular solicitante requester applicant candidato candidata candidate guest convidado convidada invitado invitada prospect prospecto billing',
);
// Roles a column alone can hold the name of (a lower-case key such as a JSON "customer" holds an id or an object).
const NAMED_ROLES = set(
  'person persona pessoa contact contacto contato cliente client customer comprador compradora buyer attendee participante participant aluno aluna alumno alumna student paciente patient titular solicitante requester applicant candidato candidata candidate guest convidado convidada invitado invitada',
);
// Others a record names: never the lead's email, phone or name.
const OTHER = set(
  'owner proprietario propietario responsavel responsable dono agent agente vendedor vendedora seller salesperson salesrep representative representante producer produtor productor assignee atribuido asignado creator criador creador author autor affiliate afiliado consultor consultora consultant staff operator operador organizer organizador',
);
// Things whose name or title is not a person's (a deal's, a product's, a form's).
const THING = set(
  'negocio negocios deal deals oportunidade oportunidad opportunity titulo title produto producto product item plano plan form formulario pagina page campanha campana campaign pipeline funil funnel embudo etapa stage pedido order ticket evento event curso course oferta offer tag tags etiqueta etiquetas lista list arquivo file assunto subject servico service loja store shop site projeto project tarefa task job cargo',
);
// Labels of an email or a phone.
const PRIMARY = set('principal primary main preferred preferido preferida padrao');
const MOBILE = set('celular celulares cel cell cellphone cellular mobile movil whatsapp wpp smartphone mobilephone');
const WORK = set(
  'work trabalho trabajo comercial business office oficina escritorio corporativo corporativa corporate profissional profesional professional empresarial',
);
const HOME = set('home casa residencial residential personal pessoal particular privado privada private');
const OTHER_LABEL = set(
  'other otro otra otros otras outro outra outros outras alternative alternativo alternativa alternate secundario secundaria secondary adicional additional extra backup',
);
const ADDRESS = set('address addresses endereco direccion shipping entrega envio');
// Words that say nothing of whose or which (articles, prepositions, a question's words, "number", "address").
const NOISE = set(
  'de do da dos das del la el los las of the a o e y and ou or your you seu sua su tu teu tua melhor best mejor qual cual what is es com con with para for por favor please informe digite enter insira ingrese escreva number numero no nr num n ddd ddi electronico eletronico completo completa full complete default aqui here voce usted atual current actual opcional optional social display #',
);
// Portuguese and Spanish prepositions: "Nome do lead", "Nombre del lead" is the lead's (the deal's) title, not a
// person's name, as Bitrix24 and Kommo call it; an English "Lead name" is the person's.
const OF = set('do da de del');

/** The words of a name: separators and camelCase split, letters and digits apart, accents stripped, lower-cased. */
export function headerWords(name: string): string[] {
  const words = name
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([a-zA-Z])([0-9])|([0-9])([a-zA-Z])/g, '$1$3 $2$4')
    .toLowerCase()
    // A number sign is a word of its own: "Phone #" is a phone, "Attendee #" no name.
    .replace(/#/g, ' # ')
    .split(/[^a-z0-9#]+/)
    .filter(Boolean);
  // "E-mail", "e_mail": one word.
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const pair = SPLIT.get(`${w} ${words[i + 1]}`);
    if (w === 'e' && (words[i + 1] === 'mail' || words[i + 1] === 'mails')) {
      out.push('email');
      i++;
    } else if (pair !== undefined) {
      out.push(pair);
      i++;
    } else out.push(...(COMPOUNDS.get(w) ?? [w]));
  }
  return out;
}

/**
 * What a column's name says it holds, or undefined when it says nothing (a word outside the vocabulary, no field
 * word, an email and a phone at once, a fax, a middle name, a thing's name or title).
 */
export function columnRole(name: string): ColumnRole | undefined {
  const all = headerWords(name);
  if (all.length === 0 || all.some((w) => FAX.has(w) || !known(w))) return undefined;
  // The object a prefix names ("Negocio - Título", "Contato principal: ..."): a prefix that holds no field word says
  // whose the column is, and its labels or things are not the column's own.
  const segments = name.split(/\s+-\s+|:\s*/).filter((s) => s.trim() !== '');
  let own = all;
  if (segments.length > 1) {
    const prefix = headerWords(segments[0]!);
    if (!prefix.some(fieldWord)) own = headerWords(segments.slice(1).join(' '));
  }
  const whose: Whose = all.some((w) => OTHER.has(w))
    ? 'other'
    : all.some((w) => COMPANY.has(w) && w !== 'business')
      ? 'org'
      : all.some((w) => PERSON.has(w))
        ? 'person'
        : 'plain';
  const email = own.some((w) => EMAIL.has(w));
  const phone = own.some((w) => PHONE.has(w));
  if (email && phone) return undefined;
  if (email || phone) {
    if (own.some((w) => THING.has(w))) return undefined;
    return { field: email ? 'email' : 'phone', whose, label: labelOf(own, phone) };
  }
  const joined = ' ' + own.join(' ') + ' ';
  const first = own.some((w) => FIRST.has(w)) || FIRST_PAIRS.some((p) => joined.includes(` ${p} `));
  const last = own.some((w) => LAST.has(w)) || LAST_PAIRS.some((p) => joined.includes(` ${p} `));
  const named = own.some((w) => NAME.has(w));
  const company = own.some((w) => COMPANY.has(w));
  if (own.some((w) => THING.has(w)) || (named && own.some((w) => MIDDLE.has(w)))) return undefined;
  if (first !== last)
    return whose === 'org' ? undefined : { field: first ? 'firstName' : 'lastName', whose, label: 'plain' };
  if (first) return undefined;
  // An organization's name ("Organização - Nome", "Nome da empresa") is the lead's company.
  if (company || (named && whose === 'org'))
    return whose === 'other' ? undefined : { field: 'company', whose, label: 'plain' };
  if (named) {
    // "Nome do lead" / "Nombre del lead": the lead's title.
    for (let i = 1; i < own.length; i++) if (own[i] === 'lead' && OF.has(own[i - 1]!)) return undefined;
    const role: ColumnRole = { field: 'name', whose, label: 'plain' };
    if (own.length === 1) role.bareName = true;
    return role;
  }
  // A person's role alone ("Comprador", "Contacto principal", "Customer"): that person's name, where the name is a
  // header (capitalized, or words), not a key such as a JSON "customer", which holds an id or an object.
  const roles = own.filter((w) => !NOISE.has(w) && !PRIMARY.has(w));
  const number = own.some((w) => w === '#' || /^\d+$/.test(w));
  if (roles.length > 0 && !number && roles.every((w) => NAMED_ROLES.has(w)) && /^\s*\p{Lu}|\s/u.test(name.trim()))
    return whose === 'person' ? { field: 'name', whose, label: 'plain', roleOnly: true } : undefined;
  return undefined;
}

/**
 * The label a value is written with in a cell of several ("WORK: ana@x.com, HOME: ana@y.org", as Bitrix24 writes its
 * multiple fields): 'fax' for a fax, undefined where the text is no label it knows.
 */
export function labelOfText(text: string, phone: boolean): Label | 'fax' | undefined {
  const words = headerWords(text);
  if (words.length === 0) return undefined;
  if (words.some((w) => FAX.has(w))) return 'fax';
  if (!words.every(known)) return undefined;
  return labelOf(words, phone);
}

function fieldWord(w: string): boolean {
  return EMAIL.has(w) || PHONE.has(w) || NAME.has(w) || FIRST.has(w) || LAST.has(w);
}

// The label of an email's or a phone's column, from its own words (not its prefix's).
function labelOf(own: string[], phone: boolean): Label {
  if (own.some((w) => PRIMARY.has(w))) return 'primary';
  if (phone && own.some((w) => MOBILE.has(w))) return 'mobile';
  if (own.some((w) => WORK.has(w))) return 'work';
  if (own.some((w) => HOME.has(w))) return 'home';
  // "Email 2", "Telefone 3": another one.
  if (own.some((w) => OTHER_LABEL.has(w) || (/^\d+$/.test(w) && Number(w) >= 2))) return 'other';
  if (phone && own.some((w) => ADDRESS.has(w))) return 'address';
  return 'plain';
}

const VOCABULARY = [
  EMAIL,
  PHONE,
  NAME,
  COMPANY,
  FIRST,
  LAST,
  MIDDLE,
  PERSON,
  OTHER,
  THING,
  PRIMARY,
  MOBILE,
  WORK,
  HOME,
  OTHER_LABEL,
  ADDRESS,
  NOISE,
  set('first given primeiro last family ultimo'),
];

function known(w: string): boolean {
  return /^\d+$/.test(w) || VOCABULARY.some((s) => s.has(w));
}
