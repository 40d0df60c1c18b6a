import { literal, type Queryable, settingsClause } from '../../engine/index.js';

type Settings = Record<string, string | number | boolean>;

/**
 * Loads a file of the service's scratch directory into `into`, a table of the service: FROM INFILE
 * is read on chDB's client side, where the confined engine reaches no file through a table function.
 */
export async function loadFile(
  engine: Queryable,
  load: {
    into: string;
    columnList: string;
    path: string;
    format: 'Native' | 'TabSeparated' | 'JSONEachRow' | 'Parquet';
    settings: Settings;
  },
): Promise<void> {
  await engine.execute(
    `INSERT INTO ${load.into} ${load.columnList} FROM INFILE ${literal(load.path)}${settingsClause(load.settings)} FORMAT ${load.format}`,
  );
}
