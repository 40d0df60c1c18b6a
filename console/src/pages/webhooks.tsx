import { useState } from 'preact/hooks';
import { v2, type Webhook } from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';
import { ErrorNote } from '../components/table.js';
import { usePolled } from '../poll.js';

interface TestResult {
  ok: boolean;
  status?: number;
  error?: string;
}

/** The team's webhooks, a test send for each, and a form for a new one. */
export function WebhooksPage() {
  const webhooks = usePolled(() => api.get<Webhook[]>(v2.webhooks), 0, []);
  const [creating, setCreating] = useState(false);
  return (
    <section>
      <div class="title-row">
        <h1>Webhooks</h1>
        {!creating && (
          <button type="button" onClick={() => setCreating(true)}>
            New webhook
          </button>
        )}
      </div>
      <ErrorNote error={webhooks.error} />
      {webhooks.value?.length === 0 && <p class="muted">No webhooks yet: alerts notify webhooks.</p>}
      {webhooks.value && webhooks.value.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>URL</th>
                <th>Test</th>
              </tr>
            </thead>
            <tbody>
              {webhooks.value.map((webhook) => (
                <WebhookRow key={webhook.id} webhook={webhook} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {creating && (
        <WebhookForm
          onDone={() => {
            setCreating(false);
            webhooks.refresh();
          }}
        />
      )}
    </section>
  );
}

function WebhookRow(props: { webhook: Webhook }) {
  const { webhook } = props;
  const [result, setResult] = useState<TestResult | undefined>(undefined);
  const {
    submit: test,
    busy,
    error: failure,
  } = useSubmit(async () => {
    setResult(undefined);
    setResult(await api.post<TestResult>(v2.webhookTest(webhook.id)));
  });
  return (
    <tr data-webhook={webhook.name}>
      <td>{webhook.name}</td>
      <td>{webhook.url}</td>
      <td>
        <button type="button" onClick={test} disabled={busy}>
          {busy ? 'Sending…' : 'Send test'}
        </button>{' '}
        {result && (
          <output class={result.ok ? 'test-ok' : 'error'}>
            {result.ok ? `Delivered (${result.status})` : `Not delivered: ${result.error}`}
          </output>
        )}
        <ErrorNote error={failure} />
      </td>
    </tr>
  );
}

/** Header lines `Name: value`, as the API's write-only `headers` object. */
function headersOf(text: string): Record<string, string> | undefined {
  const pairs = text
    .split('\n')
    .map((line) => /^\s*([^:\s]+)\s*:\s*(.*?)\s*$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1] as string, match[2] as string]);
  return pairs.length ? Object.fromEntries(pairs) : undefined;
}

function WebhookForm(props: { onDone: () => void }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [body, setBody] = useState('');
  const [headers, setHeaders] = useState('');
  const { submit, busy, error } = useSubmit(async () => {
    const parsedHeaders = headersOf(headers);
    await api.post(v2.webhooks, {
      name,
      url,
      ...(description ? { description } : {}),
      ...(body ? { body } : {}),
      ...(parsedHeaders ? { headers: parsedHeaders } : {}),
    });
    props.onDone();
  });
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New webhook">
      <h2>New webhook</h2>
      <FormError error={error} shownPaths={['name', 'url', 'description', 'body', 'headers']} />
      <Field label="Webhook name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <Field label="URL" path="url" error={error}>
        <input value={url} type="url" onInput={(e) => setUrl(e.currentTarget.value)} required />
      </Field>
      <Field label="Description (optional)" path="description" error={error}>
        <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </Field>
      <Field label="Body template (optional; {{title}}, {{state}}, {{value}}, …)" path="body" error={error}>
        <textarea rows={3} value={body} onInput={(e) => setBody(e.currentTarget.value)} />
      </Field>
      <Field
        label="Headers (optional, one Name: value a line; never shown again)"
        path="headers"
        error={error}
      >
        <textarea rows={2} value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} />
      </Field>
      <div class="form-actions">
        <button type="submit" disabled={busy}>
          Create webhook
        </button>
        <button type="button" onClick={props.onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
