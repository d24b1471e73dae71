import { formA } from './a';
import { formB } from './b';
import type { Form, FormSerialiser } from './shared';

export type { Form, FormSerialiser } from './shared';

/** `QUORUM_FORM` picks one presentation for the whole deployment (DESIGN §9). */
export function serialiserFor(form: Form): FormSerialiser {
  return form === 'A' ? formA : formB;
}
