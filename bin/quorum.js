#!/usr/bin/env node
'use strict';
// The CLI is TypeScript run in place through tsx, so `npx quorum` works from a checkout without a build.
require('tsx/cjs');
require('../cli/main.ts');
