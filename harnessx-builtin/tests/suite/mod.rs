mod ask_user;
