// Validates protocol records with the clients' own schemas, for ferrule-ui's encoder tests.
// stdin: one JSON object per line, {"protocol": "ai-sdk" | "ag-ui", "value": <chunk or event>}.
// stdout: one JSON line per input, {"ok": true} or {"ok": false, "error": "..."}.
import { uiMessageChunkSchema } from "ai";
import { EventSchemas, RunAgentInputSchema } from "@ag-ui/core/schemas";
import { createInterface } from "node:readline";

const chunkSchema = uiMessageChunkSchema();
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const { protocol, value } = JSON.parse(line);
  let result;
  if (protocol === "ai-sdk") {
    const checked = await chunkSchema.validate(value);
    result = checked.success ? { ok: true } : { ok: false, error: String(checked.error?.message ?? checked.error).slice(0, 400) };
  } else {
    const schema = protocol === "ag-ui-input" ? RunAgentInputSchema : EventSchemas;
    const checked = schema.safeParse(value);
    result = checked.success ? { ok: true } : { ok: false, error: checked.error.message.slice(0, 400) };
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}
