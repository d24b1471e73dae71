import { formA } from './a';
import { formB } from './b';
import type { Form } from '../../domain/form';
import type { FormSerialiser } from './shared';

export type { FormSerialiser } from './shared';

/** `QUORUM_FORM` picks one presentation for the whole deployment (DESIGN §9). */
export function serialiserFor(form: Form): FormSerialiser {
  return form === 'A' ? formA : formB;
}
