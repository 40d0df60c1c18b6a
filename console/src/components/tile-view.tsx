import { displayOf, type Tile, type TileData, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { rate } from '../format.js';
import { usePolled } from '../poll.js';
import { TimeChart } from './chart.js';
import { DataTable, ErrorNote } from './table.js';

export const RANGES = {
  '1h': 3_600_000,
  '6h': 6 * 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
};
export type RangeName = keyof typeof RANGES;

/**
 * One tile of a dashboard, read from its tile data (the values alerts on it evaluate) over the
 * last `range`, again every 30 s: lines or bars (uPlot), a number, or a table.
 */
export function TileView(props: { dashboardId: string; tile: Tile; range: RangeName }) {
  const { dashboardId, tile, range } = props;
  const data = usePolled(
    () => {
      const to = new Date();
      return api.get<TileData>(v2.tileData(dashboardId, tile.id, new Date(to.getTime() - RANGES[range]), to));
    },
    30_000,
    // An edited tile keeps its id: what it reads is read again when its config changes.
    [dashboardId, tile.id, range, JSON.stringify(tile)],
  );
  const display = displayOf(tile);
  return (
    <div class="tile" data-tile={tile.name}>
      <ErrorNote error={data.error} />
      {data.value && display === 'number' && <NumberTile tile={tile} data={data.value} />}
      {data.value && display === 'table' && <TableTile tile={tile} data={data.value} />}
      {data.value && (display === 'line' || display === 'stacked_bar') && (
        <TimeChart
          title={`${tile.name} (per ${data.value.granularity})`}
          bars={display === 'stacked_bar'}
          times={data.value.series[0]?.points.map((p) => Date.parse(p.t) / 1000) ?? []}
          series={data.value.series.map((s) => ({ label: s.label, values: s.points.map((p) => p.value) }))}
        />
      )}
      {data.value?.truncated && <p class="muted">Only the 20 largest groups are shown.</p>}
    </div>
  );
}

/**
 * A series' value over the whole range, where its buckets give it (a count or sum adds up, a min
 * or max is the smallest or largest); otherwise the latest bucket's, and the caption says so.
 */
export function overRange(aggFn: string, values: number[]): { value: number | undefined; latest: boolean } {
  if (values.length === 0) return { value: undefined, latest: false };
  if (aggFn === 'count' || aggFn === 'sum')
    return { value: values.reduce((a, b) => a + b, 0), latest: false };
  if (aggFn === 'min') return { value: Math.min(...values), latest: false };
  if (aggFn === 'max') return { value: Math.max(...values), latest: false };
  return { value: values[values.length - 1], latest: true };
}

function aggFnOf(tile: Tile, select: number): string {
  return tile.config?.select[select]?.aggFn ?? tile.series?.[select]?.aggFn ?? 'count';
}

function NumberTile(props: { tile: Tile; data: TileData }) {
  const first = props.data.series[0];
  const { value, latest } = overRange(aggFnOf(props.tile, 0), first?.points.map((p) => p.value) ?? []);
  return (
    <figure class="chart number-tile">
      <figcaption>{props.tile.name}</figcaption>
      <output class="big-number">{value === undefined ? '–' : rate(value)}</output>
      <span class="muted">{latest ? `latest ${props.data.granularity}` : 'over the range'}</span>
    </figure>
  );
}

function TableTile(props: { tile: Tile; data: TileData }) {
  const rows = props.data.series.map((s) => {
    const values = s.points.map((p) => p.value);
    const total = overRange(aggFnOf(props.tile, s.select), values);
    return {
      series: s.label,
      // An average or a quantile of the range is not made of its buckets' values: not shown.
      'over the range': total.latest ? '–' : rate(total.value),
      [`latest ${props.data.granularity}`]: rate(values[values.length - 1]),
    };
  });
  return (
    <figure class="chart">
      <figcaption>{props.tile.name}</figcaption>
      <DataTable rows={rows} empty="No values." />
    </figure>
  );
}
