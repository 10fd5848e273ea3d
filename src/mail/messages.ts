/** The texts of every e-mail the service sends. Codes appear in the text body (API.md). */
export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export function confirmationCodeMessage(to: string, code: string): MailMessage {
  return {
    to,
    subject: 'Your confirmation code',
    text: `Your confirmation code is ${code}.\n\nEnter it in the app to confirm this e-mail address. It expires in 10 minutes.\n\nIf you did not create an account, you can ignore this message.\n`,
  };
}

export function passwordResetCodeMessage(to: string, code: string): MailMessage {
  return {
    to,
    subject: 'Your password reset code',
    text: `Your password reset code is ${code}.\n\nEnter it in the app to choose a new password. It expires in 10 minutes.\n\nIf you did not ask to reset your password, you can ignore this message; your password is unchanged.\n`,
  };
}

export function passwordChangedMessage(to: string, publicUrl: string): MailMessage {
  return {
    to,
    subject: 'Your password was changed',
    text: `The password of your account at ${publicUrl} was just changed, and your other sessions were signed out.\n\nIf this was not you, reset your password now with "forgot password".\n`,
  };
}

export function passwordResetMessage(to: string, publicUrl: string): MailMessage {
  return {
    to,
    subject: 'Your password was reset',
    text: `The password of your account at ${publicUrl} was just reset, and every session was signed out.\n\nIf this was not you, reset your password again and review your account.\n`,
  };
}
