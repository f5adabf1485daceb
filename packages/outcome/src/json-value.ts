/** A value that survives `JSON.stringify` and `JSON.parse` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject

/** A plain JSON object. */
export interface JsonObject {
  [key: string]: JsonValue
}
