import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

// Made once: uPlot.paths.bars is a builder shared by every bar series.
const barsPath = uPlot.paths.bars?.({ size: [0.8, 64] });

export interface Series {
  label: string;
  values: (number | null)[];
}

/**
 * A time chart (uPlot: canvas, tens of kilobytes, draws a year of minutes without slowing the
 * page). `times` are epoch seconds, oldest first; each series has a value per time.
 */
export function TimeChart(props: {
  title: string;
  times: number[];
  series: Series[];
  height?: number;
  /** Bars (uPlot's bars path) instead of lines. */
  bars?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const colors = ['#2563eb', '#d97706', '#059669', '#dc2626'];
    plot.current = new uPlot(
      {
        width: element.clientWidth || 600,
        height: props.height ?? 180,
        series: [
          {},
          ...props.series.map((s, i) => {
            const color = colors[i % colors.length] as string;
            return props.bars
              ? { label: s.label, stroke: color, fill: `${color}99`, width: 1, paths: barsPath }
              : { label: s.label, stroke: color, width: 2 };
          }),
        ],
        axes: [{}, { size: 70 }],
        legend: { live: true },
      },
      [props.times, ...props.series.map((s) => s.values)],
      element,
    );
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: element.clientWidth, height: props.height ?? 180 }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [props.series.length, props.bars]);
  useEffect(() => {
    plot.current?.setData([props.times, ...props.series.map((s) => s.values)]);
  }, [props.times, props.series]);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} data-chart={props.bars ? 'bars' : 'lines'} />
    </figure>
  );
}
