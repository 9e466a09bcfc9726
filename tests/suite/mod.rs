mod examples;
mod macro_export;
mod macro_tool;
