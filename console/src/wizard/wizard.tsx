import { useState } from 'preact/hooks';
import { type ApiError, api, type Session } from '../api.js';
import { ErrorNote } from '../components/table.js';
import { type Pipe, paths, type Service } from '../model.js';
import { navigate } from '../router.js';
import { ColumnEditor, TableDefinition } from './columns.js';
import { ConnectionFields } from './connect.js';
import { KINDS, type SourceKind } from './kinds.js';
import { createBody, curlOf, type Draft, masked, newDraft, sourceBody } from './model.js';
import { type PostgresTables, TablePicker } from './postgres-tables.js';

type Step = 'kind' | 'connect' | 'preview' | 'table' | 'review';
const STEPS: { id: Step; title: string }[] = [
  { id: 'kind', title: 'Source' },
  { id: 'connect', title: 'Connection' },
  { id: 'preview', title: 'Preview' },
  { id: 'table', title: 'Table' },
  { id: 'review', title: 'Review' },
];

interface Discovered {
  fields: { name: string; type: string; optional: boolean }[];
  records: Record<string, unknown>[];
  meta: Record<string, string>;
}

/**
 * A pipe in five steps, on the API a curl user calls: the connection is checked and the first
 * records read with schemaDiscovery (PostgreSQL: the server's tables with postgresTables), the
 * columns come from the engine's inference, and the review shows the body (and the same as curl)
 * that the create sends.
 */
export function Wizard(props: { session: Session; service: Service }) {
  const org = props.session.key.organizationId;
  const pipesUrl = paths.pipes(org, props.service.id);
  const [step, setStep] = useState<Step>('kind');
  const [draft, setDraft] = useState<Draft>(newDraft('objectStorage'));
  const [discovered, setDiscovered] = useState<Discovered | undefined>(undefined);
  const [listing, setListing] = useState<PostgresTables | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const update = (change: Partial<Draft>) => setDraft({ ...draft, ...change });
  const postgres = draft.kind === 'postgres';

  const check = async () => {
    setBusy(true);
    setError(undefined);
    try {
      if (postgres) {
        setListing(
          await api.post<PostgresTables>(`${pipesUrl}/postgresTables`, { source: sourceBody(draft) }),
        );
      } else {
        const found = await api.post<Discovered>(`${pipesUrl}/schemaDiscovery`, {
          source: sourceBody(draft),
        });
        setDiscovered(found);
        update({
          columns: found.fields.map((f) => ({
            sourceField: f.name,
            name: f.name,
            type: f.type,
            include: true,
          })),
          table: {
            ...draft.table,
            table: draft.table.table || suggestedTable(draft),
            sortingKey: found.fields[0] ? [found.fields[0].name] : [],
          },
          name: draft.name || suggestedTable(draft),
        });
      }
      setStep('preview');
    } catch (failure) {
      setError(failure as ApiError);
    } finally {
      setBusy(false);
    }
  };

  const create = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const pipe = await api.post<Pipe>(pipesUrl, createBody(draft));
      navigate('s', props.service.id, 'pipes', pipe.id);
    } catch (failure) {
      setError(failure as ApiError);
    } finally {
      setBusy(false);
    }
  };

  const problem = (path: string) => error?.forField(path);
  const body = createBody(draft);
  return (
    <section class="wizard">
      <h1>New pipe</h1>
      <ol class="steps">
        {STEPS.map((s) => (
          <li key={s.id} class={s.id === step ? 'active' : ''}>
            {s.title}
          </li>
        ))}
      </ol>
      {step === 'kind' && (
        <div class="kinds">
          {(Object.keys(KINDS) as SourceKind[]).map((kind) => (
            <button
              type="button"
              key={kind}
              class={`kind ${draft.kind === kind ? 'active' : ''}`}
              onClick={() => {
                setDraft(newDraft(kind));
                setDiscovered(undefined);
                setListing(undefined);
                setStep('connect');
              }}
            >
              <strong>{KINDS[kind].title}</strong>
              <span class="muted">{KINDS[kind].blurb}</span>
            </button>
          ))}
        </div>
      )}
      {step === 'connect' && (
        <>
          <h2>{KINDS[draft.kind].title}: connection</h2>
          <ConnectionFields
            kind={draft.kind}
            values={draft.values}
            onChange={(values) => update({ values })}
            error={error}
          />
          <Unplaced error={error} prefix={`source.${draft.kind}.`} />
          <Buttons
            back={() => setStep('kind')}
            next={check}
            nextLabel={busy ? 'Checking…' : 'Check connection and preview'}
            busy={busy}
          />
        </>
      )}
      {step === 'preview' && !postgres && discovered && (
        <>
          <p class="muted">
            {Object.entries(discovered.meta)
              .map(([k, v]) => `${k}: ${v}`)
              .join(' · ')}
          </p>
          <ColumnEditor
            records={discovered.records}
            columns={draft.columns}
            onChange={(columns) => update({ columns })}
            problem={problem('destination.columns')}
          />
          <Buttons back={() => setStep('connect')} next={() => setStep('table')} />
        </>
      )}
      {step === 'preview' && postgres && listing && (
        <>
          <label>
            Replication mode
            <select
              name="replicationMode"
              value={draft.replicationMode}
              onChange={(e) => update({ replicationMode: e.currentTarget.value as Draft['replicationMode'] })}
            >
              <option value="cdc">cdc: a snapshot, then every change</option>
              <option value="snapshot">snapshot: the tables once</option>
              <option value="cdc_only">cdc_only: changes from now on</option>
            </select>
          </label>
          <TablePicker
            listing={listing}
            mode={draft.replicationMode}
            picked={draft.picked}
            onChange={(picked) => update({ picked })}
          />
          <Buttons
            back={() => setStep('connect')}
            next={() => setStep('table')}
            disabled={draft.picked.length === 0}
          />
        </>
      )}
      {step === 'table' && (
        <>
          <label>
            Pipe name
            <input name="name" value={draft.name} onInput={(e) => update({ name: e.currentTarget.value })} />
            {problem('name') && <span class="field-error">{problem('name')}</span>}
          </label>
          <TableDefinition
            table={draft.table}
            columns={draft.columns.filter((c) => c.include).map((c) => c.name)}
            onChange={(table) => update({ table })}
            problem={problem}
            withColumns={!postgres}
          />
          <Buttons back={() => setStep('preview')} next={() => setStep('review')} />
        </>
      )}
      {step === 'review' && (
        <>
          <p class="muted">The request the console sends (secrets masked here), and the same as curl:</p>
          <pre class="code" data-part="body">
            {JSON.stringify(masked(body), null, 2)}
          </pre>
          <pre class="code" data-part="curl">
            {curlOf(`${location.origin}${pipesUrl}`, masked(body))}
          </pre>
          <Unplaced error={error} prefix="" />
          <Buttons
            back={() => setStep('table')}
            next={create}
            nextLabel={busy ? 'Creating…' : 'Create pipe'}
            busy={busy}
          />
        </>
      )}
    </section>
  );
}

function suggestedTable(draft: Draft): string {
  const from = String(
    draft.values.url ?? draft.values.topics ?? draft.values.streamName ?? draft.values.path ?? 'events',
  );
  const base = from.split(/[/,]/).filter(Boolean).pop() ?? 'events';
  return base.replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9_]/g, '_') || 'events';
}

/** The error's message, unless every part of it is shown beside a field of this step. */
function Unplaced(props: { error: ApiError | undefined; prefix: string }) {
  const { error } = props;
  if (!error) return null;
  const placed =
    props.prefix !== '' &&
    error.problems.length > 0 &&
    error.problems.every((p) => p.path?.startsWith(props.prefix));
  return placed ? null : <ErrorNote error={error} />;
}

function Buttons(props: {
  back: () => void;
  next: () => void;
  nextLabel?: string;
  busy?: boolean;
  disabled?: boolean;
}) {
  return (
    <div class="wizard-buttons">
      <button type="button" onClick={props.back}>
        Back
      </button>
      <button type="submit" onClick={props.next} disabled={props.busy || props.disabled}>
        {props.nextLabel ?? 'Next'}
      </button>
    </div>
  );
}
