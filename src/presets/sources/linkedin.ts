// LinkedIn Lead Sync: a page of leadFormResponses (`elements`, one lead each). An answer names its question by id
// only; which question is the email, the phone or the name is said by the form's questions (`predefinedField`),
// which a pull includes when it asks for the form (fields=...,form:(...content)). Each answer is joined to its
// question by that id before mapping, never read by its position.
import { getPath, parsePath } from '../../mapping/fields.js';
import { is, missing } from '../conditions.js';
import type { JsonSource } from '../types.js';

const QUESTIONS = parsePath('form.content.questions');

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The response with each answer's question (its predefinedField and name) beside it, where the form is there. */
function withQuestions(ev: Record<string, unknown>): Record<string, unknown> {
  const questions = getPath(ev, QUESTIONS);
  const response = ev.formResponse;
  if (!Array.isArray(questions) || !isObject(response) || !Array.isArray(response.answers)) return ev;
  const byId = new Map<string, Record<string, unknown>>();
  for (const q of questions)
    if (isObject(q) && (typeof q.questionId === 'number' || typeof q.questionId === 'string'))
      byId.set(String(q.questionId), q);
  const answers = response.answers.map((a: unknown) => {
    if (!isObject(a) || (typeof a.questionId !== 'number' && typeof a.questionId !== 'string')) return a;
    const q = byId.get(String(a.questionId));
    return q ? { ...a, question: { predefinedField: q.predefinedField, name: q.name } } : a;
  });
  return { ...ev, formResponse: { ...response, answers } };
}

const answer = (field: string) =>
  `formResponse.answers[question.predefinedField=${field}].answerDetails.textQuestionAnswer.answer`;

export const linkedinLeadSync: JsonSource = {
  name: 'linkedin-lead-sync',
  title: 'LinkedIn Lead Sync responses',
  docs: [
    'https://learn.microsoft.com/en-us/linkedin/marketing/lead-sync/leadsync',
    'https://developers.qodex.ai/linkedin-marketing-solutions-versioned-apis/lead-sync/use-cases-sponsored/8-pull-schedule-periodic-form-response-lead-pulls-1',
  ],
  reads: 'json',
  signature: { has: ['elements[*].formResponse.answers[*].questionId'] },
  events: 'elements',
  prepare: withQuestions,
  mapping: {
    fields: {
      type: 'leadType',
      // Epoch milliseconds.
      time: 'submittedAt',
      email: answer('EMAIL'),
      phone: answer('PHONE_NUMBER'),
      firstName: answer('FIRST_NAME'),
      lastName: answer('LAST_NAME'),
      company: answer('COMPANY_NAME'),
      source: ['form.hiddenFields[name=utm_source].value', 'leadMetadata.sponsoredLeadMetadata.campaign'],
    },
    // A lead's id: a pull whose time window overlaps the last one's returns the same lead with the same id.
    key: { path: 'id' },
  },
  skip: [{ when: is('testLead', true), reason: 'a test lead (testLead is true): not a person who filled in the form' }],
  explain: [
    {
      when: missing('form.content.questions'),
      reason:
        "LinkedIn's answers name their question by id only, and this response holds no form questions to read them by: add form:(hiddenFields,creationLocale,name,id,content) to the fields of the leadFormResponses pull, or map the question ids in the config",
    },
  ],
  note: 'Each answer is given its question from the form the pull includes (question.predefinedField, question.name), by questionId. Email, phone, first and last name and company are the answers whose predefinedField is EMAIL, PHONE_NUMBER, FIRST_NAME, LAST_NAME and COMPANY_NAME. Custom questions are not read: map them in the config by name ("formResponse.answers[question.name=teamSize].answerDetails.textQuestionAnswer.answer"), or by questionId for a pull without the form.',
};
