import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RunProgress } from '../domain/runs';

/** A run's query and signal, defined once here so the API and the CLI use them without loading the workflow code. */
export const progressQuery = defineQuery<RunProgress>('progress');
export const cancelSignal = defineSignal('cancel');
