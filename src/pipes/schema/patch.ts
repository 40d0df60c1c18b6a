import type { Static } from '@sinclair/typebox';
import { StrictObject, StringEnum } from '../../schema/index.js';
import { PIPE_COMMANDS } from '../state.js';
import { Scaling, SettingsMap } from './pipe.js';

export const StateCommandBody = StrictObject({ command: StringEnum(PIPE_COMMANDS) });
export type StateCommandBody = Static<typeof StateCommandBody>;

export const ScalingBody = Scaling;
export type ScalingBody = Static<typeof Scaling>;

export const SettingsBody = SettingsMap;
export type SettingsBody = Static<typeof SettingsBody>;
