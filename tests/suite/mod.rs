mod macro_tool;
