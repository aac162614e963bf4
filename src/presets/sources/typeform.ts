// Typeform webhooks: one form response per delivery, its answers a list read by answer type (email, phone_number)
// or by the question's ref, never by position (unanswered questions are left out of the list).
import { is } from '../conditions.js';
import type { JsonSource } from '../types.js';

const answer = (refs: string) => `form_response.answers[field.ref=${refs}].text`;

export const typeform: JsonSource = {
  name: 'typeform',
  title: 'Typeform webhook',
  docs: [
    'https://www.typeform.com/developers/webhooks/example-payload/',
    'https://www.typeform.com/developers/webhooks/',
  ],
  reads: 'json',
  signature: {
    has: ['event_id', 'form_response.answers'],
    equals: { event_type: ['form_response', 'form_response_partial'] },
  },
  mapping: {
    fields: {
      type: 'event_type',
      time: ['form_response.submitted_at', 'form_response.landed_at'],
      email: ['form_response.answers[type=email].email', 'form_response.hidden.email'],
      phone: ['form_response.answers[type=phone_number].phone_number', 'form_response.hidden.phone'],
      name: [answer('name|full_name|fullname|nome|nome_completo'), 'form_response.hidden.name'],
      firstName: answer('first_name|firstname|primeiro_nome'),
      lastName: answer('last_name|lastname|sobrenome'),
      company: [answer('company|company_name|empresa'), 'form_response.hidden.company'],
      source: ['form_response.hidden.utm_source', 'form_response.hidden.source'],
    },
    key: { path: 'event_id' },
  },
  skip: [
    {
      when: is('event_type', 'form_response_partial'),
      reason: 'a partial response (form_response_partial): the complete response is the lead',
    },
  ],
  note: 'Name and company are the text answers whose question ref is name, first_name, company, ... (set the refs in the form, or map your own in the config: "fields": {"company": "form_response.answers[field.ref=your_ref].text"}).',
};
