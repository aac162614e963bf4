// Discovery finds the person in records of shapes no field plan knows: nested, in answer lists, inside strings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { discoverPerson, embedded, wordsOf } from '../../src/mapping/discover.js';

test('a buyer beats a producer, whatever their order, and the name comes from the buyer', () => {
  const d = discoverPerson(
    {
      event: 'PURCHASE_APPROVED',
      data: {
        producer: { name: 'Escola Exemplo', email: 'vendas@example.org' },
        buyer: { name: 'Ana Souza', email: 'ana@example.com', checkout_phone: '11987654321' },
      },
    },
    'BR',
  );
  assert.equal(d.email?.value, 'ana@example.com');
  assert.equal(d.email?.path, 'data.buyer.email');
  assert.equal(d.email?.role, 'buyer');
  assert.equal(d.name?.value, 'Ana Souza');
  assert.equal(d.phone?.value, '+5511987654321');
  assert.deepEqual(d.others, ['data.producer.email']);
});

test('answer lists: by label, by type, and by a question defined elsewhere', () => {
  const tally = discoverPerson({
    data: {
      fields: [
        { key: 'question_1', label: 'Seu nome', type: 'INPUT_TEXT', value: 'Bia Lima' },
        { key: 'question_2', label: 'Correo', type: 'INPUT_EMAIL', value: 'bia@example.com' },
        { key: 'question_3', label: 'Celular', type: 'INPUT_PHONE_NUMBER', value: '+5511912345678' },
      ],
    },
  });
  assert.equal(tally.email?.value, 'bia@example.com');
  assert.equal(tally.email?.path, 'data.fields[label=Correo]');
  assert.equal(tally.phone?.value, '+5511912345678');
  assert.equal(tally.name?.value, 'Bia Lima');
  const byId = discoverPerson({
    form: {
      questions: [
        { id: 'q1', title: 'Full name' },
        { id: 'q2', title: 'Mobile' },
      ],
    },
    answers: [
      { question_id: 'q1', answer: 'Caio Reis' },
      { question_id: 'q2', answer: '+14155550123' },
    ],
  });
  assert.equal(byId.phone?.value, '+14155550123');
  assert.equal(byId.name?.value, 'Caio Reis');
});

test('JSON inside strings, escaped twice, and form-encoded bodies', () => {
  const inner = JSON.stringify({ q3_email: 'dani@example.com', q4_name: { first: 'Dani', last: 'Melo' } });
  assert.equal(discoverPerson({ rawRequest: inner }).email?.value, 'dani@example.com');
  assert.equal(discoverPerson({ msg: JSON.stringify(inner) }).email?.value, 'dani@example.com');
  assert.equal(discoverPerson({ message: `webhook received: ${inner}` }).email?.value, 'dani@example.com');
  const form = discoverPerson({
    body: 'type=subscribe&data%5Bemail%5D=eva%40example.com&data%5Bmerges%5D%5BFNAME%5D=Eva',
  });
  assert.equal(form.email?.value, 'eva@example.com');
  const twilio = discoverPerson({ body: 'From=%2B14155550177&To=%2B15559990000&Body=quero+saber' });
  assert.equal(twilio.phone?.value, '+14155550177');
  assert.deepEqual(embedded('just text'), undefined);
});

test('values by their shape: an email in field_7, a phone in a wa_id or a tel: URI', () => {
  assert.equal(discoverPerson({ field_7: 'Fabi@Example.com' }).email?.by, 'value');
  assert.equal(
    discoverPerson({ contacts: [{ wa_id: '5511988887777', profile: { name: 'Gil' } }] }).phone?.value,
    '+5511988887777',
  );
  assert.equal(discoverPerson({ link: 'tel:+442071838750' }).phone?.value, '+442071838750');
  assert.equal(
    discoverPerson({ order_number: '12345678901' }).phone,
    undefined,
    'a number is not a phone by its digits alone',
  );
  assert.equal(
    discoverPerson({ from: 'no-reply@example.com', lead: { mail: 'hugo@example.com' } }).email?.value,
    'hugo@example.com',
  );
});

test('words of names', () => {
  assert.deepEqual(wordsOf('E-mail'), ['e', 'mail', 'email']);
  assert.deepEqual(wordsOf('firstName'), ['first', 'name', 'firstname']);
  assert.deepEqual(wordsOf('Telefone - Celular'), ['telefone', 'celular', 'telefonecelular']);
});
