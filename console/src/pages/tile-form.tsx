import { AGG_FNS, type AlertSource, DISPLAY_TYPES } from '../alerts-model.js';
import type { ApiError } from '../api.js';
import { Field } from '../components/field.js';
import type { TileDraft } from '../tile-draft.js';

/** The paths of tile `index` the server may name in a 400, for FormError's "shown beside a field". */
export function tilePaths(index: number): string[] {
  return [`tiles[${index}].name`, `tiles[${index}].config`];
}

/** The fields of one tile: its source, one aggregate of a value, a filter, a group and how it is drawn. */
export function TileFields(props: {
  draft: TileDraft;
  onChange: (draft: TileDraft) => void;
  sources: AlertSource[];
  /** The tile's place in the dashboard's `tiles`, which the server's messages name. */
  index: number;
  error: ApiError | undefined;
}) {
  const { draft, error } = props;
  const set = <K extends keyof TileDraft>(key: K, value: TileDraft[K]) =>
    props.onChange({ ...draft, [key]: value });
  const at = `tiles[${props.index}].config`;
  return (
    <>
      <Field label="Tile name" path={`tiles[${props.index}].name`} error={error}>
        <input value={draft.name} onInput={(e) => set('name', e.currentTarget.value)} required />
      </Field>
      <Field label="Source" path={`${at}.sourceId`} error={error}>
        <select value={draft.sourceId} onChange={(e) => set('sourceId', e.currentTarget.value)} required>
          {props.sources.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Chart" path={`${at}.displayType`} error={error}>
        <select value={draft.displayType} onChange={(e) => set('displayType', e.currentTarget.value)}>
          {DISPLAY_TYPES.map((t) => (
            <option key={t} value={t}>
              {t === 'stacked_bar' ? 'bar' : t}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Aggregate" path={`${at}.select[0].aggFn`} error={error}>
        <select value={draft.aggFn} onChange={(e) => set('aggFn', e.currentTarget.value)}>
          {AGG_FNS.map((fn) => (
            <option key={fn} value={fn}>
              {fn}
            </option>
          ))}
        </select>
      </Field>
      {draft.aggFn === 'quantile' && (
        <Field label="Quantile level" path={`${at}.select[0].level`} error={error}>
          <input
            value={draft.level}
            inputMode="decimal"
            onInput={(e) => set('level', e.currentTarget.value)}
          />
        </Field>
      )}
      {draft.aggFn !== 'count' && (
        <Field label="Value (column or expression)" path={`${at}.select[0].valueExpression`} error={error}>
          <input
            value={draft.valueExpression}
            onInput={(e) => set('valueExpression', e.currentTarget.value)}
          />
        </Field>
      )}
      <Field label="Filter" path={`${at}.select[0].where`} error={error}>
        <input
          value={draft.where}
          placeholder={draft.whereLanguage === 'lucene' ? 'status:>=500' : 'status >= 500'}
          onInput={(e) => set('where', e.currentTarget.value)}
        />
      </Field>
      <Field label="Filter language" path={`${at}.select[0].whereLanguage`} error={error}>
        <select
          value={draft.whereLanguage}
          onChange={(e) => set('whereLanguage', e.currentTarget.value as TileDraft['whereLanguage'])}
        >
          <option value="lucene">lucene</option>
          <option value="sql">sql</option>
        </select>
      </Field>
      <Field label="Group by (optional)" path={`${at}.groupBy`} error={error}>
        <input value={draft.groupBy} onInput={(e) => set('groupBy', e.currentTarget.value)} />
      </Field>
      {draft.moreSelects && (
        <p class="muted">
          This tile draws {draft.moreSelects.length} more series, kept as they are (the API edits them).
        </p>
      )}
    </>
  );
}
