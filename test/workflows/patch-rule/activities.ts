/** The two steps the patch-rule workflows choose between (test/workflows/patch-rule.test.ts). */
export const patchRuleActivities = {
  async oldStep(): Promise<string> {
    return 'old';
  },
  async newStep(): Promise<string> {
    return 'new';
  },
};
