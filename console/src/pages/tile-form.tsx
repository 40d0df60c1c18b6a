import { useState } from 'preact/hooks';
import { AGG_FNS, type AlertSource, DISPLAY_TYPES } from '../alerts-model.js';
import type { ApiError } from '../api.js';
import { Field } from '../components/field.js';

/** What the tile form holds, as the API's tile config (README, "Alerts area": dashboards). */
export interface TileDraft {
  name: string;
  displayType: string;
  sourceId: string;
  aggFn: string;
  level: string;
  valueExpression: string;
  where: string;
  whereLanguage: 'sql' | 'lucene';
  groupBy: string;
}

export function emptyTile(sources: AlertSource[]): TileDraft {
  return {
    name: '',
    displayType: 'line',
    sourceId: sources[0]?.id ?? '',
    aggFn: 'count',
    level: '0.95',
    valueExpression: '',
    where: '',
    whereLanguage: 'lucene',
    groupBy: '',
  };
}

/** The body of a one-tile dashboard's tile, placed at the grid's top left. */
export function tileBody(draft: TileDraft) {
  return {
    name: draft.name,
    x: 0,
    y: 0,
    w: 6,
    h: 4,
    config: {
      displayType: draft.displayType,
      sourceId: draft.sourceId,
      select: [
        {
          aggFn: draft.aggFn,
          ...(draft.aggFn === 'quantile' ? { level: Number(draft.level) } : {}),
          ...(draft.aggFn !== 'count' || draft.valueExpression
            ? { valueExpression: draft.valueExpression }
            : {}),
          ...(draft.where.trim() ? { where: draft.where, whereLanguage: draft.whereLanguage } : {}),
        },
      ],
      ...(draft.groupBy.trim() ? { groupBy: draft.groupBy } : {}),
    },
  };
}

/** The paths of a tile the server may name in a 400, for FormError's "shown beside a field". */
export const TILE_PATHS = ['tiles[0].name', 'tiles[0].config'];

/** The fields of one tile: its source, one aggregate of a value, a filter, a group and how it is drawn. */
export function TileFields(props: {
  draft: TileDraft;
  onChange: (draft: TileDraft) => void;
  sources: AlertSource[];
  error: ApiError | undefined;
}) {
  const { draft, error } = props;
  const set = <K extends keyof TileDraft>(key: K, value: TileDraft[K]) =>
    props.onChange({ ...draft, [key]: value });
  const at = 'tiles[0].config';
  return (
    <>
      <Field label="Tile name" path="tiles[0].name" error={error}>
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
    </>
  );
}

export function useTileDraft(sources: AlertSource[]) {
  return useState<TileDraft>(() => emptyTile(sources));
}
