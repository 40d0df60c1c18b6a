import { useState } from 'preact/hooks';
import { v2, type Webhook } from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormActions, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';

const WEBHOOK_PATHS = ['name', 'url', 'description', 'body', 'headers', 'queryParams'];

/** Lines `Name<separator>value`, as the API's write-only `headers` or `queryParams` object. */
function pairsOf(text: string, separator: ':' | '='): Record<string, string> | undefined {
  const line = separator === ':' ? /^\s*([^:\s]+)\s*:\s*(.*?)\s*$/ : /^\s*([^=\s]+)\s*=\s*(.*?)\s*$/;
  const pairs = text
    .split('\n')
    .map((l) => line.exec(l))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1] as string, match[2] as string]);
  return pairs.length ? Object.fromEntries(pairs) : undefined;
}

/**
 * A new webhook, or (with `webhook`) a change of one. PUT is a full replace and the headers and
 * query parameters are write-only, so an edit cannot keep them unseen: the form says so, and
 * saving one with both left empty needs a box ticked that says they are removed.
 */
export function WebhookForm(props: { webhook?: Webhook; onDone: () => void }) {
  const { webhook } = props;
  const [name, setName] = useState(webhook?.name ?? '');
  const [url, setUrl] = useState(webhook?.url ?? '');
  const [description, setDescription] = useState(webhook?.description ?? '');
  const [body, setBody] = useState(webhook?.body ?? '');
  const [headers, setHeaders] = useState('');
  const [queryParams, setQueryParams] = useState('');
  const [removeSecrets, setRemoveSecrets] = useState(false);
  const parsedHeaders = pairsOf(headers, ':');
  const parsedQuery = pairsOf(queryParams, '=');
  const { submit, busy, error } = useSubmit(async () => {
    const fields = {
      name,
      url,
      ...(parsedHeaders ? { headers: parsedHeaders } : {}),
      ...(parsedQuery ? { queryParams: parsedQuery } : {}),
    };
    if (webhook) {
      await api.put(v2.webhook(webhook.id), {
        ...fields,
        description: description || null,
        body: body || null,
      });
    } else {
      await api.post(v2.webhooks, {
        ...fields,
        ...(description ? { description } : {}),
        ...(body ? { body } : {}),
      });
    }
    props.onDone();
  });
  const title = webhook ? `Edit webhook ${webhook.name}` : 'New webhook';
  return (
    <form class="card form-grid" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <FormError error={error} shownPaths={WEBHOOK_PATHS} />
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
      {webhook && (
        <p class="note">
          Headers and query parameters are never shown again, so this form cannot show the ones this webhook
          has: <strong>saving replaces them with what is entered below</strong>, and empty means none. Enter
          them again to keep them.
        </p>
      )}
      <Field
        label="Headers (optional, one Name: value a line; never shown again)"
        path="headers"
        error={error}
      >
        <textarea rows={2} value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} />
      </Field>
      <Field
        label="Query parameters (optional, one name=value a line; never shown again)"
        path="queryParams"
        error={error}
      >
        <textarea rows={2} value={queryParams} onInput={(e) => setQueryParams(e.currentTarget.value)} />
      </Field>
      {webhook && !parsedHeaders && !parsedQuery && (
        <label class="check">
          <input
            type="checkbox"
            checked={removeSecrets}
            onChange={(e) => setRemoveSecrets(e.currentTarget.checked)}
            required
          />{' '}
          Save with no headers and no query parameters (any this webhook has are removed)
        </label>
      )}
      <FormActions submit={webhook ? 'Save webhook' : 'Create webhook'} busy={busy} onCancel={props.onDone} />
    </form>
  );
}
