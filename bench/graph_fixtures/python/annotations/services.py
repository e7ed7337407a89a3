class Mailer:
    def send(self, to):
        return to


class Store:
    def save(self, item):
        return item
