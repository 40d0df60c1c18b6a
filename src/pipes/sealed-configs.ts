import { SEALED_CONTEXT, type SecretBox } from '../crypto/index.js';
import type { Problem } from '../errors.js';
import type { PipeRow } from '../store/index.js';
import type { PipeConfig } from './model.js';
import { redactAll, secretValues } from './runtime-port.js';
import { joinSecrets, type SecretPaths, splitSecrets, withoutSecrets } from './secrets.js';

/**
 * Pipe configurations as stored: the secrets taken out (secrets.ts) and sealed on their own,
 * bound to the pipe's id, so a sealed blob cannot be moved to another pipe.
 */
export class SealedConfigs {
  constructor(
    private readonly box: SecretBox,
    /** Every secret field of every kind the Sluice runs (secrets.ts). */
    private readonly secretPaths: SecretPaths,
  ) {}

  seal(pipeId: string, config: PipeConfig): Pick<PipeRow, 'config' | 'secrets'> {
    const { publicConfig, secrets } = splitSecrets(
      config as unknown as Record<string, unknown>,
      this.secretPaths,
    );
    const sealed =
      Object.keys(secrets).length > 0 ? this.box.sealJson(secrets, SEALED_CONTEXT.pipe(pipeId)) : null;
    return { config: publicConfig, secrets: sealed };
  }

  /** Problems whose messages quote no secret of `config` (engine and SDK messages quote their input). */
  redacted(problems: Problem[], config: PipeConfig): Problem[] {
    return withoutSecrets(problems, config, this.secretPaths);
  }

  /**
   * The full configuration, secrets included (only for validation and the runtime), and a
   * function that takes those secrets out of any text (engine errors quote their input).
   */
  open(row: Pick<PipeRow, 'id' | 'config' | 'secrets'>): {
    config: PipeConfig;
    redact(text: string): string;
  } {
    const secrets = row.secrets
      ? this.box.openJson<Record<string, unknown>>(row.secrets, SEALED_CONTEXT.pipe(row.id))
      : {};
    const values = secretValues(secrets);
    return {
      config: joinSecrets(row.config, secrets) as unknown as PipeConfig,
      redact: (text) => redactAll(text, values),
    };
  }
}
